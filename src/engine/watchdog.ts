/**
 * Keeps a lease alive by extending it when half of its validity is left: one extension at a
 * time, on an unref'ed timer, and never past `holdUntil` (the `maxHoldMs` bound), so a stuck
 * holder cannot keep a lock forever. The holder re-plans it after every successful extension,
 * its own or the caller's: a caller's shorter extension moves the next one earlier.
 */
export class Watchdog {
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly now: () => number,
    /** Extends by `ttlMs` (and then re-plans this watchdog); rejects when the lock is lost. */
    private readonly extend: (ttlMs: number) => Promise<void>,
    private readonly ttlMs: number,
    private readonly holdUntil: number,
    /** Shortest TTL an extension may ask for (node timeout, drift). */
    private readonly minTtlMs: number,
  ) {}

  /** (Re)schedules the next extension for a lease valid until `deadline`. */
  schedule(deadline: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
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
    // A failed extension already marked the lock lost and fired its signal. (`then` keeps a
    // synchronous throw out of this timer callback.)
    Promise.resolve(ttlMs)
      .then(this.extend)
      .catch(() => this.stop());
  }
}
