import { NotSentError } from '../driver/connection.js';
import type { WaitingPlace } from '../lua/waiting-line.js';
import type { NodeResult } from '../node-result.js';
import type { NodeSet } from './context.js';
import type { HoldId, HoldKind, Lease, ReleaseResult } from './contract.js';
import { askEveryNode } from './every-node.js';

/**
 * Deletes the lease's key on every node (compare-and-delete, so another holder's key is never
 * touched), or with `keepMs` sets it to expire that long from now instead. Resolves once every
 * node answered or timed out, so that the key is gone from all reachable nodes; never rejects
 * because the lease had expired.
 */
export async function releaseLease(
  context: NodeSet,
  lease: Lease,
  keepMs?: number,
): Promise<{ result: ReleaseResult; nodes: readonly NodeResult[] }> {
  if (lease.status === 'released') return { result: 'not-held', nodes: [] };
  const wasHeld = lease.status === 'held';
  lease.status = 'released';
  const ending =
    keepMs === undefined
      ? deleteIfOwned(context, lease, true)
      : expireIfOwned(context, lease, keepMs);
  const results = await ending.settled;
  // A lease that had already run out is not held, but nodes that failed still say so.
  const result = verdict(results, lease.kind.quorum(context.nodes.length));
  return { result: wasHeld || result === 'failed' ? result : 'not-held', nodes: results };
}

/**
 * A quorum (a majority, for a lock) deleted our hold: released; so many said it is not ours
 * (expired, taken) that no quorum could hold it: not held; otherwise too many nodes failed
 * or stayed silent to tell: failed, and the hold may stay on them until its TTL runs out.
 */
function verdict(results: readonly NodeResult[], quorum: number): ReleaseResult {
  const count = (outcome: NodeResult['outcome']) =>
    results.filter((result) => result.outcome === outcome).length;
  if (count('yes') >= quorum) return 'released';
  if (count('no') > results.length - quorum) return 'not-held';
  return 'failed';
}

/** Which hold of ours to delete. */
export interface DeleteRequest extends HoldId {
  readonly kind: HoldKind;
  readonly key: string;
  readonly ttlMs: number;
  /**
   * Each node's answer to the acquisition round: nodes that cannot hold our token are
   * skipped. All nodes when absent.
   */
  readonly acquireResults?: readonly (NodeResult | undefined)[];
  /**
   * Undoing an attempt of an acquisition that waits in line: its place, which a kind whose
   * grant took it out of the line there (a semaphore's) gives back, so that every node keeps
   * the same waiters in the same order.
   */
  readonly line?: WaitingPlace;
}

/**
 * Compare-and-deletes our key on every node that may hold our token, judged by the answers to
 * the acquisition round; the others count as "no" without any I/O. Deletes are always sent,
 * also to a node that stopped answering, so that a `SET` queued there is undone when it
 * wakes up. Used by release and to undo failed acquisitions and extensions. `announce`: wake
 * waiters, for a real release (or a lost lease); not when undoing a failed attempt, which
 * leaves every node as it was and must not wake anyone (least of all the attempt's own
 * waiter).
 */
export function deleteIfOwned(context: NodeSet, request: DeleteRequest, announce: boolean) {
  const { kind, ttlMs, acquireResults } = request;
  const { key, token, attempt, unanswered, line } = request;
  const hold = line
    ? { key, token, attempt, unanswered, announce, line }
    : { key, token, attempt, unanswered, announce };
  return askEveryNode(context, ttlMs, (node, timeoutMs, index) =>
    mayHoldToken(acquireResults, index)
      ? kind.release(node.forced, hold, timeoutMs)
      : Promise.resolve(0),
  );
}

/**
 * Sets our key to expire `keepMs` from now on every node that may hold it (compare-and-
 * PEXPIRE). Unlike an extension it claims no validity: the holder is done with the lock, and
 * the key only keeps others out until then.
 */
function expireIfOwned(context: NodeSet, lease: Lease, keepMs: number) {
  const { kind, key, token, attempt, unanswered, ttlMs, acquireResults } = lease;
  const hold = { key, token, attempt, unanswered, ttlMs: keepMs };
  return askEveryNode(context, ttlMs, (node, timeoutMs, index) =>
    mayHoldToken(acquireResults, index) ? kind.extend(node, hold, timeoutMs) : Promise.resolve(0),
  );
}

/**
 * Whether node `index` may hold our token after an acquisition round: not if it refused
 * (held by another) or the command never reached it. A node that is still silent may.
 * Every node may when the round is not known.
 */
function mayHoldToken(
  acquireResults: readonly (NodeResult | undefined)[] | undefined,
  index: number,
): boolean {
  if (acquireResults === undefined) return true;
  const result = acquireResults[index];
  if (result?.outcome === 'no') return false;
  return !(result?.outcome === 'error' && result.error instanceof NotSentError);
}
