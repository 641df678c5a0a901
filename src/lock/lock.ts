import { validateTtl } from '../options.js';
import type { LockContext } from './context.js';
import { extendLease } from './extend.js';
import type { Lease, ReleaseResult } from './lease.js';
import { releaseLease } from './release.js';

/**
 * A held lock. Trust it only while {@link Lock.remainingMs} is above zero: past that another
 * client may hold the same resource.
 */
export class Lock {
  /** The locked resource's name, as given to `acquire`. */
  readonly resource: string;
  readonly #context: LockContext;
  readonly #lease: Lease;

  /** @internal Created by `Locker`; not part of the public API. */
  constructor(context: LockContext, lease: Omit<Lease, 'status'>) {
    this.resource = lease.resource;
    this.#context = context;
    this.#lease = { ...lease, status: 'held' };
  }

  /** Milliseconds of validity left, by the monotonic clock; 0 once expired, lost or released. */
  remainingMs(): number {
    if (this.#lease.status !== 'held') return 0;
    return Math.max(0, this.#lease.deadline - this.#context.clock.now());
  }

  /**
   * Extends the lease to `ttlMs` from now (default: the TTL it was acquired with).
   * Rejects with a `LockLostError` when a majority of nodes no longer confirms our hold;
   * the lock is then lost for good.
   */
  extend(ttlMs: number = this.#lease.ttlMs): Promise<void> {
    validateTtl('ttlMs', ttlMs, this.#context.settings);
    return extendLease(this.#context, this.#lease, ttlMs);
  }

  /**
   * Deletes the lock on every node. Resolves `'released'` when a majority deleted it, and
   * `'not-held'` when it had already expired, been taken or been released. Never rejects
   * because the lease ran out.
   */
  release(): Promise<ReleaseResult> {
    return releaseLease(this.#context, this.#lease);
  }
}
