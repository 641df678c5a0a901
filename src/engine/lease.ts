import type { NodeResult } from '../quorum/node-result.js';
import type { HoldId, HoldKind } from './contract.js';

/**
 * The mutable state behind one {@link Lock} handle: which hold it is (the acquisition's token
 * and the attempt that got it), never leaving it.
 */
export interface Lease extends HoldId {
  /** What is held: a lock, a semaphore permit... */
  readonly kind: HoldKind;
  readonly resource: string;
  readonly key: string;
  /** TTL asked for at acquisition; the default for extensions. */
  readonly ttlMs: number;
  /** Monotonic instant at which the acquisition round started. */
  readonly acquiredAt: number;
  /** Monotonic instant until which the lease may be trusted. */
  deadline: number;
  /** Monotonic instant before which a release only sets the key to expire then (`minHoldMs`). */
  readonly keepUntil: number;
  /** The fencing token, when the lock was acquired with `fencing: true`. */
  readonly fence: bigint | undefined;
  /** Each node's answer to the winning acquisition round (late answers keep arriving). */
  readonly acquireResults: readonly (NodeResult | undefined)[];
  status: 'held' | 'released' | 'lost';
}

/** What {@link Lock.release} found. */
export type ReleaseResult =
  /** A majority of nodes deleted our key. */
  | 'released'
  /** A majority said the key is not ours (the lease had expired or been taken), or it was released before. */
  | 'not-held'
  /**
   * Too many nodes failed or did not answer to tell (the `released` event's `nodes` say why:
   * a NOPERM, a node down...). Our key may stay on them until its TTL runs out.
   */
  | 'failed';
