/**
 * How one node's answer to INFO changes what a locker knows of it (`NodeIdentities` applies
 * what this returns: the inspection, the lease records, the warning).
 */
import {
  changeOf,
  type IdentityChange,
  type InfoRead,
  isNewIdentity,
  serversIn,
  youngOnArrival,
} from './identity-change.js';
import type { Identity } from './identity-state.js';

/** The locker's rules that an answer is taken in by. */
export interface InfoRules {
  /** The node is a Redis Cluster: its masters change by its own failovers. */
  readonly isCluster: boolean;
  /** `restartGraceMs`, when given: a node first seen abstains while younger. */
  readonly restartGraceMs: number | undefined;
  /** Whether the nodes keep lease records (see `LeaseRecords`). */
  readonly leaseRecords: boolean;
  /** Whether a node that changed abstains for the grace (else: a warning only). */
  readonly abstainsOnChange: boolean;
}

/** What the caller does with an answer taken in. */
export interface InfoTaken {
  /** The INFO is to be inspected: the server's first, another server's, a Cluster's masters. */
  readonly inspect: boolean;
  /** The node answered as another server than before: how, for its warning. */
  readonly changed?: {
    readonly change: IdentityChange;
    readonly before: readonly string[];
    readonly after: readonly string[];
  };
}

/**
 * Takes in `info`, a node's answer to INFO sent on its connection `generation` (`read`: when
 * it was asked and answered; `lastAnsweredAt`: when the connection before answered last),
 * into its identity `id`.
 */
export function takeInfo(
  id: Identity,
  info: string,
  generation: number,
  read: InfoRead,
  lastAnsweredAt: number | undefined,
  rules: InfoRules,
): InfoTaken {
  const { readAt } = read;
  const before = id.runIds;
  const servers = serversIn(info);
  id.generation = generation;
  id.readAt = readAt;
  id.failure = undefined;
  if (servers.length === 0) {
    id.runIds ??= null; // it will not say; one that did keeps what it said
    return { inspect: before === undefined };
  }
  const runIds = servers.map((s) => s.runId);
  id.runIds = runIds;
  if (!Array.isArray(before)) {
    id.unchecked = true;
    if (rules.restartGraceMs) id.change = youngOnArrival(servers, readAt, rules.restartGraceMs);
    else if (rules.leaseRecords) id.arrival = { servers, readAt }; // young? the records tell
    return { inspect: true };
  }
  // A Cluster's masters, read again: their settings may have changed, or a replica took over.
  if (rules.isCluster) return { inspect: true };
  if (!isNewIdentity(before, runIds)) return { inspect: false };
  id.unchecked = true;
  id.changed = true;
  const change = changeOf(before, servers, read, lastAnsweredAt);
  if (rules.abstainsOnChange) {
    id.change = change;
    id.rereading = rules.leaseRecords; // the records are read again (see `NodeIdentities`)
  }
  // Another server: its settings are inspected too.
  return { inspect: true, changed: { change, before, after: runIds } };
}

/**
 * The server refuses INFO itself: denied to the user (NOPERM) or renamed away (unknown
 * command). Anything else (NOAUTH, LOADING, a connection failure) is asked again next time.
 */
export function isInfoRefused(error: unknown): boolean {
  return error instanceof Error && /^(NOPERM|ERR unknown command)/.test(error.message);
}
