/**
 * What a locker knows of one node's server (`Identity`), as `NodeIdentities` keeps it, and the
 * small facts about it that need no other node: its state before it ever answered, the name
 * its lease record gives its server, and which INFO failures are final.
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
   * compared with the other nodes' (see `#findDuplicates`): it does not vote meanwhile.
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

/** The server(s) a record names: run_ids in order, whatever order a client lists them in. */
export function serverName(runIds: readonly string[]): string {
  return [...runIds].sort().join(',');
}

/**
 * The server refuses INFO itself: denied to the user (NOPERM) or renamed away (unknown
 * command). Anything else (NOAUTH, LOADING, a connection failure) is asked again next time.
 */
export function isInfoRefused(error: unknown): boolean {
  return error instanceof Error && /^(NOPERM|ERR unknown command)/.test(error.message);
}
