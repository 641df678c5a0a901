/**
 * Keeps a lease alive by extending it when half of its validity is left: one extension at a
 * time (the next is scheduled only when the previous one settled), on an unref'ed timer, and
 * never past `holdUntil` (the `maxHoldMs` bound), so a stuck holder cannot keep a lock forever.
 */
export class Watchdog {
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly now: () => number,
    /** Extends by `ttlMs`; resolves the new deadline, rejects when the lock is lost. */
    private readonly extend: (ttlMs: number) => Promise<number>,
    private readonly ttlMs: number,
    private readonly holdUntil: number,
    /** Shortest TTL an extension may ask for (node timeout, drift). */
    private readonly minTtlMs: number,
  ) {}

  /** Schedules the next extension for a lease valid until `deadline`. */
  schedule(deadline: number): void {
    if (this.#stopped) return;
    const delay = Math.max(0, (deadline - this.now()) / 2);
    this.#timer = setTimeout(() => this.#run(), delay);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #run(): void {
    if (this.#stopped) return;
    const ttlMs = Math.floor(Math.min(this.ttlMs, this.holdUntil - this.now()));
    if (ttlMs <= this.minTtlMs) return; // maxHoldMs reached: let the lease run out
    this.extend(ttlMs).then(
      (deadline) => this.schedule(deadline),
      // A failed extension already marked the lock lost and fired its signal.
      () => this.stop(),
    );
  }
}
