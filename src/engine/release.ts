import { NotSentError } from '../driver/connection.js';
import type { StallGuard } from '../driver/stall-guard.js';
import type { NoQuorumError } from '../errors.js';
import type { WaitingPlace } from '../lua/waiting-line.js';
import type { NodeResult } from '../node-result.js';
import type { FanOutOptions } from '../quorum/fan-out.js';
import { quorumOf } from '../quorum/tally.js';
import { misconfiguredOperation, misconfiguredQuorum } from './configuration-failure.js';
import type { NodeSet } from './context.js';
import type { HoldId, HoldKind, Lease, ReleaseResult } from './contract.js';
import { askEveryNode, nodeTimeoutFor, releaseTimeoutFor } from './every-node.js';

/**
 * Deletes the lease's key on every node (compare-and-delete, so another holder's key is never
 * touched), or with `keepMs` sets it to expire that long from now instead. Never rejects
 * because the lease had expired. Resolves as soon as a quorum deleted it (the outcome can no
 * longer change; `everyNode` tells when the others answered), else once every node answered,
 * or once the lease's per-node timeout has passed with the verdict known (a straggler then
 * counts as timed out); while the verdict is still open, it waits for each node up to a
 * release's own, longer timeout (see `releaseTimeoutFor`), so that a busy node's done delete
 * is not reported failed.
 * `refused`: when it failed because configuration errors (an ACL user without a command the
 * release runs, say) leave too few nodes for a quorum, the error to reject with: retrying
 * cannot fix that, so it must not look like a node that was briefly away.
 */
export function releaseLease(
  context: NodeSet,
  lease: Lease,
  keepMs?: number,
): Promise<ReleaseOutcome> {
  if (lease.status === 'released') return Promise.resolve({ result: 'not-held', nodes: [] });
  const wasHeld = lease.status === 'held';
  lease.status = 'released';
  const quorum = lease.kind.quorum(context.nodes.length);
  // Each node may take a release's own, longer timeout while the verdict is open; from the
  // lease's per-node timeout on, a known verdict is enough (the nodes still silent count as
  // timed out, as they would in any other request of the lease).
  const timing: ReleaseTiming = {
    timeoutMs: releaseTimeoutFor(context, lease.ttlMs),
    quorum,
    settleEarly: {
      afterMs: nodeTimeoutFor(context, lease.ttlMs),
      accept: knownVerdict,
    },
  };
  const ending =
    keepMs === undefined
      ? deleteIfOwned(context, lease, true, timing)
      : expireIfOwned(context, lease, keepMs, timing);
  // Waiting for the last node would only delay the caller (and, one at a time on N nodes,
  // split each node's replies over more reads): the deletes are sent, the verdict is in.
  // Plain reactions, not an async function: every release passes through here.
  return ending.decided.then((decision): ReleaseOutcome | Promise<ReleaseOutcome> => {
    if (!decision.quorum) {
      return ending.settled.then((results) =>
        withoutQuorum(lease, keepMs, wasHeld, results, quorum),
      );
    }
    const result = wasHeld ? 'released' : 'not-held';
    const { results } = decision;
    if (!results.includes(undefined)) return { result, nodes: results };
    return { result, nodes: results, everyNode: ending.settled };
  });
}

/** Whether `soFar` tells how a release ended (released or not held) with the others silent. */
function knownVerdict(soFar: readonly NodeResult[], quorum: number | undefined): boolean {
  return verdict(soFar, quorum ?? quorumOf(soFar.length)) !== 'failed';
}

/** How a release that no quorum confirmed ended, once every node answered (or timed out). */
function withoutQuorum(
  lease: Lease,
  keepMs: number | undefined,
  wasHeld: boolean,
  results: readonly NodeResult[],
  quorum: number,
): ReleaseOutcome {
  // A lease that had already run out is not held, but nodes that failed still say so.
  const result = verdict(results, quorum);
  if (result === 'failed' && misconfiguredQuorum(results, quorum)) {
    const consequence = 'the key stays until its TTL runs out';
    const what = keepMs === undefined ? 'Releasing' : 'Setting the expiry of';
    const refused = misconfiguredOperation(lease.resource, what, consequence, results, quorum);
    return { result, nodes: results, refused };
  }
  return { result: wasHeld || result === 'failed' ? result : 'not-held', nodes: results };
}

/** How a release ended. */
export interface ReleaseOutcome {
  readonly result: ReleaseResult;
  /** Each node's result when the outcome was known: `undefined` for a node still silent. */
  readonly nodes: readonly (NodeResult | undefined)[];
  /** When it resolved before every node answered: every node's result, once each answered. */
  readonly everyNode?: Promise<readonly NodeResult[]>;
  /** Why no quorum could release it, when configuration errors made the difference. */
  readonly refused?: NoQuorumError;
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
 * waiter). `timing`: how long each node gets (by default the lease's per-node timeout).
 */
export function deleteIfOwned(
  context: NodeSet,
  request: DeleteRequest,
  announce: boolean,
  timing?: ReleaseTiming,
) {
  const { kind, acquireResults } = request;
  const { key, token, attempt, unanswered, line } = request;
  const hold = line
    ? { key, token, attempt, unanswered, announce, line }
    : { key, token, attempt, unanswered, announce };
  const timeoutMs = timing?.timeoutMs ?? nodeTimeoutFor(context, request.ttlMs);
  return askEveryNode(
    context,
    timeoutMs,
    (node, nodeTimeoutMs, index) =>
      mayHoldToken(acquireResults, index)
        ? kind.release(node.forced, hold, nodeTimeoutMs)
        : NOT_OURS,
    timing ? { quorum: timing.quorum, settleEarly: timing.settleEarly } : {},
  );
}

/**
 * Sets our key to expire `keepMs` from now on every node that may hold it (compare-and-
 * PEXPIRE). Unlike an extension it claims no validity: the holder is done with the lock, and
 * the key only keeps others out until then.
 */
function expireIfOwned(context: NodeSet, lease: Lease, keepMs: number, timing: ReleaseTiming) {
  const { kind, key, token, attempt, unanswered, acquireResults } = lease;
  const hold = { key, token, attempt, unanswered, ttlMs: keepMs };
  return askEveryNode(
    context,
    timing.timeoutMs,
    (node, nodeTimeoutMs, index) =>
      mayHoldToken(acquireResults, index) ? kind.extend(node, hold, nodeTimeoutMs) : NOT_OURS,
    { quorum: timing.quorum, settleEarly: timing.settleEarly },
  );
}

/** How long a release waits for each node (see `releaseLease`). */
interface ReleaseTiming {
  readonly timeoutMs: number;
  /** Deletes that make the release certain: the lease kind's quorum. */
  readonly quorum: number;
  readonly settleEarly: NonNullable<FanOutOptions<StallGuard, number>['settleEarly']>;
}

/** A node that cannot hold our token: counts as "not ours" without any I/O. */
const NOT_OURS: Promise<number> = Promise.resolve(0);

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
