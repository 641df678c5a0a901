import type { LockerEmitter } from './events.js';
import type { NodeSet } from './every-node.js';
import type { NodeIdentities } from './node-identity.js';
import type { Shutdown } from './shutdown.js';
import type { WakeUps } from './wake-ups.js';

/**
 * What every lock operation of one locker shares. A function takes the narrowest view it
 * needs: {@link NodeSet} to ask every node, {@link IdentifiedNodes} to count votes, or a
 * `Pick` of this.
 */
export interface LockContext extends NodeSet {
  readonly events: LockerEmitter;
  /** Wakes a waiter over pub/sub when a release hands it the lock. */
  readonly wakeUps: WakeUps;
  /** Stops waits and ends held locks when the locker closes. */
  readonly shutdown: Shutdown;
  /** Which server each node is: no server may count twice towards a majority. */
  readonly identities: NodeIdentities;
  /**
   * Resolves once the connections opened at construction are ready (or gave up); undefined
   * when that already happened.
   */
  readonly connected: () => Promise<void> | undefined;
  /** When the locker was made (by `clock`): its `startupWaitMs` counts from then. */
  readonly startedAt: number;
}

/** The nodes and which server each is: what counting an attempt's votes needs. */
export interface IdentifiedNodes extends NodeSet {
  readonly identities: NodeIdentities;
}

export type { NodeSet };
