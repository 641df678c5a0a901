/**
 * What a locker knows of one node's server (`Identity`), as `NodeIdentities` keeps it, and
 * its state before it ever answered.
 */
import type { IdentityChange, ServerInfo } from './identity-change.js';

/** What the locker knows of one node's server (see `NodeIdentities`). */
export interface Identity {
  /**
   * The run_ids it answered with last (each master's, for a Redis Cluster); `null` when it
   * will not say (INFO renamed or denied); `undefined` before it answered.
   */
  runIds: readonly string[] | null | undefined;
  /** Its connection's generation when that answer was asked for. */
  generation: number;
  /** When it answered last (the locker's clock). */
  readAt: number;
  /** Why it could not be asked last time (its connection's real cause). */
  failure: Error | undefined;
  /** Why it abstains until `since` + the grace: it restarted, failed over, is young. */
  change: IdentityChange | undefined;
  /**
   * The lease records are being read again for its `change`: its grace may still grow, so it
   * abstains whatever the grace read so far says.
   */
  rereading: boolean;
  /** Whether it ever answered as another server than at first. */
  changed: boolean;
  /** The node that reaches the same server and votes for it, while this one abstains. */
  duplicateOf: number | undefined;
  /**
   * It said which server it is (first, or another than before), and that server was not yet
   * compared with the other nodes' (see `findDuplicates`): it does not vote meanwhile.
   */
  unchecked: boolean;
  /** Its answer to the INFO of a round, while on the way (it may outlast the round). */
  answering: Promise<void> | undefined;
  /** Its servers when first seen, until the round's lease records tell whether it is young. */
  arrival: { servers: readonly ServerInfo[]; readAt: number } | undefined;
  /** How far its wall clock is ahead of this process's (ms), by its last INFO. */
  clockOffsetMs: number | undefined;
}

/** A node that has not answered yet. */
export function newIdentity(): Identity {
  return {
    runIds: undefined,
    generation: -1,
    readAt: 0,
    failure: undefined,
    change: undefined,
    rereading: false,
    changed: false,
    duplicateOf: undefined,
    unchecked: false,
    answering: undefined,
    arrival: undefined,
    clockOffsetMs: undefined,
  };
}
