/**
 * Which nodes a locker must ask (again) which server they are, or record a lease on, before
 * they vote (see `IdentityRounds`). Allocates nothing.
 */
import type { Clock } from '../clock.js';
import type { StallGuard } from '../driver/stall-guard.js';
import type { NodeSet } from './every-node.js';
import type { IdentityBook } from './identity-book.js';
import type { Identity } from './identity-state.js';
import { serverName } from './lease-records.js';

/**
 * How often a node whose connection does not report reconnects is asked again which server
 * it is, while the locker locks.
 */
export const IDENTITY_RECHECK_MS = 1_000;

/**
 * How often the masters of a Redis Cluster node are asked again for their `INFO`, while the
 * locker locks, for settings changed since (an eviction policy set by `CONFIG SET`). They are
 * also asked as soon as the cluster names other masters (a replica promoted), or a command
 * failed with its connection.
 */
export const CLUSTER_RECHECK_MS = 10_000;

/** Whether some node must be asked (again) which server it is. Allocates nothing. */
export function anyDue(book: IdentityBook, { nodes, clock }: NodeSet): boolean {
  for (let index = 0; index < book.ids.length; index++) {
    const node = nodes[index];
    if (node && isDue(book, index, node, clock)) return true;
  }
  return false;
}

/**
 * Whether some node that is due must answer before its votes count: any but a Redis Cluster
 * that answered once, whose masters are asked again in the background.
 */
export function mustWait(book: IdentityBook, { nodes, clock }: NodeSet): boolean {
  for (let index = 0; index < book.ids.length; index++) {
    const node = nodes[index];
    const id = book.ids[index] as Identity;
    if (!node) continue;
    if (mustRecord(book, index)) return true;
    if (node.isCluster && id.runIds !== undefined) continue;
    if (isDue(book, index, node, clock)) return true;
  }
  return false;
}

/**
 * Whether node `index` votes but for the lease record it must get first (a node whose
 * server refused it is asked again every {@link IDENTITY_RECHECK_MS}, not before every
 * acquisition), or is first seen and waits for the records to tell whether it is young.
 */
function mustRecord(book: IdentityBook, index: number): boolean {
  const records = book.records;
  if (!records) return false;
  if (book.ids[index]?.arrival) return true;
  if (!records.due(index, book.longestTtlMs)) return false;
  const now = book.set?.clock.now() ?? 0;
  if (records.refusedSince(index, now, IDENTITY_RECHECK_MS)) return false;
  return recordable(book, index) !== undefined;
}

/** The server to name in node `index`'s lease record, when it may get one now. */
export function recordable(book: IdentityBook, index: number): string | undefined {
  const id = book.ids[index] as Identity;
  if (!Array.isArray(id.runIds) || !book.voting.votes(index)) return undefined;
  return serverName(id.runIds);
}

/** Whether node `index` must be asked which server it is, or get its lease record. */
function isDue(book: IdentityBook, index: number, node: StallGuard, clock: Clock): boolean {
  return mustRecord(book, index) || identityDue(book, index, node, clock);
}

/** Whether node `index` must be asked (again) which server it is. */
export function identityDue(
  book: IdentityBook,
  index: number,
  node: StallGuard,
  clock: Clock,
): boolean {
  const id = book.ids[index] as Identity;
  if (id.runIds === undefined) return true;
  if (id.runIds === null) return false;
  if (node.isCluster) {
    return !readOnCurrent(id, node) || clock.now() - id.readAt >= CLUSTER_RECHECK_MS;
  }
  if (!readOnCurrent(id, node)) return true;
  return !node.reportsReconnects && clock.now() - id.readAt >= IDENTITY_RECHECK_MS;
}

/** Whether `id` was read on `node`'s current connection. */
export function readOnCurrent(id: Identity, node: { readonly generation: number }): boolean {
  return id.generation === node.generation;
}
