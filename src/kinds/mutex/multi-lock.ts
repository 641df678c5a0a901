import type { ReleaseResult } from '../../engine/contract.js';
import type { Lock } from '../../engine/lock.js';

/**
 * Several locks held together (see `Locker.acquireAll`): one handle for all of them. Trust
 * it only while {@link MultiLock.remainingMs} is above zero, that is until its signal
 * aborts: the group is lost as soon as any of its locks is.
 */
export class MultiLock implements AsyncDisposable {
  /** The locked resources, in the order they were locked (sorted). */
  readonly resources: readonly string[];
  readonly #locks: readonly Lock[];
  readonly #signal: AbortSignal;

  /** @internal Created by `Locker.acquireAll`; not part of the public API. */
  constructor(locks: readonly Lock[]) {
    this.#locks = locks;
    this.resources = locks.map((lock) => lock.resource);
    this.#signal = firstAbort(locks.map((lock) => lock.signal));
  }

  /** Aborts with the first `LockLostError` of any of the locks. */
  get signal(): AbortSignal {
    // Reading a lock's signal after its deadline aborts it, and through it this one.
    for (const lock of this.#locks) if (lock.signal.aborted) break;
    return this.#signal;
  }

  /** Each resource's fencing token, with `fencing: true`. */
  get fences(): ReadonlyMap<string, bigint> {
    const fences = new Map<string, bigint>();
    for (const lock of this.#locks)
      if (lock.fence !== undefined) fences.set(lock.resource, lock.fence);
    return fences;
  }

  /** The validity left of the lock that runs out first (ms); 0 once any is gone. */
  remainingMs(): number {
    return Math.min(...this.#locks.map((lock) => lock.remainingMs()));
  }

  /** Extends every lock (see `Lock.extend`); rejects when any of them is lost. */
  async extend(ttlMs?: number): Promise<void> {
    await Promise.all(this.#locks.map((lock) => lock.extend(ttlMs)));
  }

  /**
   * Releases every lock. `'released'` when all were, `'failed'` when any release failed,
   * `'not-held'` otherwise (some had expired or been taken).
   */
  async release(): Promise<ReleaseResult> {
    const results = await Promise.all(this.#locks.map((lock) => lock.release()));
    if (results.every((result) => result === 'released')) return 'released';
    return results.includes('failed') ? 'failed' : 'not-held';
  }

  /** Releases every lock at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}

/** Aborts with the reason of whichever of `signals` aborts first (`AbortSignal.any`, Node 20.3+). */
function firstAbort(signals: readonly AbortSignal[]): AbortSignal {
  const controller = new AbortController();
  const aborted = signals.find((signal) => signal.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return controller.signal;
  }
  const onAbort = (event: Event) => {
    for (const signal of signals) signal.removeEventListener('abort', onAbort);
    controller.abort((event.target as AbortSignal).reason);
  };
  for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
  return controller.signal;
}
