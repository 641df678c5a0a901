import { setMaxListeners } from 'node:events';

/** A lock the locker still holds, as its close sees it. */
export interface HeldLock {
  /** Whether its lease ran out or it was let go (then there is nothing to end). */
  readonly over: () => boolean;
  /** Ends it because the locker closes. */
  readonly end: () => Promise<unknown>;
}

/**
 * How a locker closes: it stops every wait still running, ends every lock it still holds,
 * and waits for every operation still talking to the nodes (acquisitions undoing attempts
 * or leaving waiting lines, releases, extensions) before the connections may close.
 */
export class Shutdown {
  readonly #controller = new AbortController();
  readonly #held = new Set<HeldLock>();
  /** Size of `#held` at which locks that are over are swept out (amortised O(1) per hold). */
  #sweepAt = 64;
  #active = 0;
  #idle: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor() {
    // Every waiting acquisition listens for the close: thousands at once are normal.
    setMaxListeners(Number.POSITIVE_INFINITY, this.#controller.signal);
  }

  /** Aborts when the close begins. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get closed(): boolean {
    return this.#controller.signal.aborted;
  }

  /** An operation that talks to the nodes begins; {@link Shutdown.end} must follow. */
  begin(): void {
    this.#active++;
  }

  end(): void {
    if (--this.#active === 0) this.#idle?.resolve();
  }

  /**
   * Runs `operation` between {@link Shutdown.begin} and {@link Shutdown.end}. `settle`, given
   * its value, runs in the same reaction, before the end: what it begins (see `begin`) keeps
   * the count above 0, and what it returns (or throws) is the result.
   */
  track<T, U = T>(operation: () => Promise<T>, settle?: (value: T) => U): Promise<U> {
    this.begin();
    let running: Promise<T>;
    try {
      running = operation();
    } catch (error) {
      this.end();
      return Promise.reject(error);
    }
    // One reaction, not an async function's chain: every release passes through here.
    return running.then(
      (value) => {
        try {
          return settle ? settle(value) : (value as unknown as U);
        } finally {
          this.end();
        }
      },
      (error: unknown) => {
        this.end();
        throw error;
      },
    );
  }

  /** Registers a held lock; the returned function unregisters it. */
  hold(lock: HeldLock): () => void {
    this.#held.add(lock);
    if (this.#held.size >= this.#sweepAt) {
      // Locks nobody released (left to expire) must not pile up here.
      for (const held of this.#held) if (held.over()) this.#held.delete(held);
      this.#sweepAt = Math.max(64, 2 * this.#held.size);
    }
    return () => this.#held.delete(lock);
  }

  /**
   * Stops waits, ends the held locks, and resolves once no operation talks to the nodes any
   * more. Called once, by the locker.
   */
  async close(): Promise<void> {
    this.#controller.abort();
    const ending = [...this.#held].filter((lock) => !lock.over());
    this.#held.clear();
    await Promise.all(ending.map((lock) => lock.end()));
    while (this.#active > 0) {
      this.#idle ??= deferred();
      await this.#idle.promise;
      this.#idle = undefined;
    }
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
