import type { StallGuard } from '../driver/stall-guard.js';
import type { NodeResult } from '../node-result.js';
import type { Decision, FanOut, Judgement } from '../quorum/fan-out.js';
import { validityMs } from '../quorum/validity.js';
import type { IdentifiedNodes } from './context.js';
import type { AcquireRequest, TakeReply } from './contract.js';
import { askEveryNode, nodeTimeoutFor } from './every-node.js';
import { establishFence } from './fence.js';
import { deleteIfOwned } from './release.js';
import { awaitReplicas } from './replicas.js';

/** The outcome of one acquisition attempt across all nodes. */
export type Attempt =
  | {
      readonly kind: 'acquired';
      readonly startedAt: number;
      /** Monotonic instant until which the lease may be trusted. */
      readonly deadline: number;
      /** The fencing token, when asked for. */
      readonly fence: bigint | undefined;
      readonly results: readonly (NodeResult | undefined)[];
    }
  /** Held by someone else: other holders' votes alone deny a majority. */
  | {
      readonly kind: 'busy';
      readonly holderRemainingMs: number | undefined;
      readonly results: readonly NodeResult[];
    }
  /** Failed or silent nodes made the difference. */
  | { readonly kind: 'unavailable'; readonly results: readonly NodeResult[] }
  /** A majority agreed, but too late: the validity was used up. */
  | {
      readonly kind: 'expired';
      readonly elapsedMs: number;
      readonly results: readonly NodeResult[];
    };

/**
 * Asks one node for the lock. `state` is 0 when it is now ours, else the holder's remaining
 * TTL (> 0), -1 (held without expiry) or -2 (free, but another waiter is first in line, fair mode);
 * `fence` is the node's fence counter after a fenced acquisition.
 */
function takeOnNode(
  context: IdentifiedNodes,
  node: StallGuard,
  request: AcquireRequest,
  timeoutMs: number,
): Promise<TakeReply> {
  const { clock, settings } = context;
  const { replicaAcks } = settings;
  if (replicaAcks === 0) return request.kind.take(node, request, timeoutMs); // the usual case
  const until = clock.now() + timeoutMs;
  return request.kind.take(node, request, timeoutMs).then(async (reply) => {
    if (reply.state === 0) await awaitReplicas(node, replicaAcks, clock, until);
    return reply;
  });
}

function judge({ state, fence }: TakeReply): Judgement {
  if (state !== 0) return { vote: 'no', ...(state > 0 ? { holderRemainingMs: state } : {}) };
  return fence === undefined ? { vote: 'yes' } : { vote: 'yes', fence };
}

/**
 * One Redlock round: the kind's take on every node in parallel (`SET NX PX` for a lock),
 * success only with the kind's quorum (a majority for a lock) and validity > 0. A failed round deletes our key on every node that may hold it (including
 * nodes that did not answer) before it returns, so the next round starts clean. A silent
 * node costs at most two per-node timeouts (the round's, then the delete's), and after that
 * nothing, as the stall guard stops sending it work.
 */
export function attemptAcquire(
  context: IdentifiedNodes,
  request: AcquireRequest,
): Promise<Attempt> {
  const { clock, nodes, settings } = context;
  const { kind, ttlMs } = request;
  const quorum = kind.quorum(nodes.length);
  const startedAt = clock.now();
  const round = askEveryNode(
    context,
    nodeTimeoutFor(context, ttlMs),
    (node, timeoutMs, index) =>
      context.identities.known(index, ttlMs)
        ? takeOnNode(context, node, request, timeoutMs)
        : Promise.reject(
            context.identities.abstention(index, ttlMs) ?? context.identities.unidentified(index),
          ),
    { judge, quorum },
  );
  // The usual outcome in one reaction, not an async function's chain: a quorum, no fence.
  return round.decided.then((decision) => {
    if (decision.quorum && !request.fencing) {
      const { decidedAt, results } = decision;
      const validity = validityMs(ttlMs, startedAt, decidedAt, settings.driftFactor);
      if (validity > 0) return acquired(startedAt, decidedAt + validity, undefined, results);
    }
    return concluded(context, request, round, startedAt, decision);
  });
}

/** A round's outcome when it drew a fence, or did not get the hold. */
async function concluded(
  context: IdentifiedNodes,
  request: AcquireRequest,
  round: FanOut,
  startedAt: number,
  decision: Decision,
): Promise<Attempt> {
  const { clock, nodes, settings } = context;
  const { kind, ttlMs } = request;
  let decidedAt = decision.decidedAt;
  let fence: bigint | undefined;
  if (decision.quorum && request.fencing) {
    // The fence must be settled on a majority before it counts; that takes time too.
    fence = await establishFence(context, request, decision.results);
    decidedAt = clock.now();
  }
  const validity = validityMs(ttlMs, startedAt, decidedAt, settings.driftFactor);
  if (decision.quorum && validity > 0 && fence !== undefined) {
    return acquired(startedAt, decidedAt + validity, fence, decision.results);
  }

  // The deletes start as soon as the verdict is known, while stragglers are still awaited.
  const acquireResults = decision.results;
  const undo = deleteIfOwned(context, { ...request, acquireResults }, false);
  const [results] = await Promise.all([round.settled, undo.settled]);
  if (decision.quorum && validity <= 0) {
    return { kind: 'expired', elapsedMs: decidedAt - startedAt, results };
  }
  if (decision.quorum) return { kind: 'unavailable', results }; // the fence found no majority
  const quorum = kind.quorum(nodes.length);
  const yes = results.filter((r) => r.outcome === 'yes').length;
  const failed = results.filter((r) => r.outcome === 'timeout' || r.outcome === 'error').length;
  if (yes + failed >= quorum) return { kind: 'unavailable', results };
  return { kind: 'busy', holderRemainingMs: soonestExpiry(results), results };
}

function acquired(
  startedAt: number,
  deadline: number,
  fence: bigint | undefined,
  results: readonly (NodeResult | undefined)[],
): Attempt {
  return { kind: 'acquired', startedAt, deadline, fence, results };
}

function soonestExpiry(results: readonly NodeResult[]): number | undefined {
  let soonest: number | undefined;
  for (const r of results) {
    if (r.outcome === 'no' && r.holderRemainingMs !== undefined) {
      soonest = Math.min(soonest ?? Number.POSITIVE_INFINITY, r.holderRemainingMs);
    }
  }
  return soonest;
}
