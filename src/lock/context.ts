import type { LockerEmitter } from './events.js';
import type { NodeSet } from './every-node.js';
import type { NodeIdentities } from './node-identity.js';
import type { Shutdown } from './shutdown.js';
import type { WakeUps } from './wake-ups.js';

/** What every lock operation of one locker shares. */
export interface LockContext extends NodeSet {
  readonly events: LockerEmitter;
  /** Wakes waiters over pub/sub when a lock they wait for is released. */
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
}
