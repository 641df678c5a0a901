import type { StallGuard } from '../driver/stall-guard.js';
import { queueKeys, releaseChannel } from '../keys.js';
import { fanOut } from '../quorum/fan-out.js';
import type { NodeResult } from '../quorum/node-result.js';
import { quorumOf } from '../quorum/tally.js';
import { validityMs } from '../quorum/validity.js';
import { acquireFairScript } from '../scripts/acquire-fair.js';
import { runScript } from '../scripts/script.js';
import { deleteIfOwned, type LockContext, markStalled, nodeTimeoutFor } from './context.js';

/** The outcome of one acquisition attempt across all nodes. */
export type Attempt =
  | {
      readonly kind: 'acquired';
      readonly startedAt: number;
      /** Monotonic instant until which the lease may be trusted. */
      readonly deadline: number;
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

/** What one acquisition asks each node for. */
export interface AcquireRequest {
  readonly key: string;
  readonly token: string;
  readonly ttlMs: number;
  /** Fair mode: wait in line. `ticket` orders the line, identically on every node. */
  readonly fair?: { readonly ticket: number; readonly waiterTimeoutMs: number };
}

/**
 * Asks one node for the lock: 0 when it is now ours, else the holder's remaining TTL (> 0),
 * -1 (held without expiry) or -2 (free, but another fair waiter is first in line).
 */
function takeOnNode(node: StallGuard, request: AcquireRequest, timeoutMs: number): Promise<number> {
  const { key, token, ttlMs, fair } = request;
  if (fair) {
    const { queue, deadlines } = queueKeys(key);
    const args = [token, ttlMs, fair.ticket, fair.waiterTimeoutMs, releaseChannel(key)];
    return runScript(node, acquireFairScript, [key, queue, deadlines], args, timeoutMs);
  }
  // Plain SET NX PX, as the algorithm specifies: one round trip, no script. Only when the key
  // is taken does a second command ask how long the holder's lease still runs.
  return node
    .send('SET', [key, token, 'PX', ttlMs, 'NX'], timeoutMs)
    .then((reply) => (reply === 'OK' ? 0 : node.send('PTTL', [key], timeoutMs).then(Number)));
}

/**
 * One Redlock round: `SET NX PX` on every node in parallel, success only with a majority and
 * validity > 0. A failed round deletes our key on every node that may hold it (including
 * nodes that did not answer) before it returns, so the next round starts clean. A silent
 * node costs at most two per-node timeouts (the round's, then the delete's), and after that
 * nothing, as the stall guard stops sending it work.
 */
export async function attemptAcquire(
  context: LockContext,
  request: AcquireRequest,
): Promise<Attempt> {
  const { clock, nodes, settings } = context;
  const { key, token, ttlMs } = request;
  const startedAt = clock.now();
  const timeoutMs = nodeTimeoutFor(context, ttlMs);
  const round = fanOut(nodes, {
    timeoutMs,
    clock,
    run: (node) => takeOnNode(node, request, timeoutMs),
    judge: (reply) =>
      reply === 0
        ? { vote: 'yes' }
        : { vote: 'no', ...(reply > 0 ? { holderRemainingMs: reply } : {}) },
    onTimeout: markStalled,
  });
  const decision = await round.decided;
  const validity = validityMs(ttlMs, startedAt, decision.decidedAt, settings.driftFactor);
  if (decision.quorum && validity > 0) {
    return {
      kind: 'acquired',
      startedAt,
      deadline: decision.decidedAt + validity,
      results: decision.results,
    };
  }

  // The deletes start as soon as the verdict is known, while stragglers are still awaited.
  const undo = deleteIfOwned(context, key, token, ttlMs, decision.results);
  const [results] = await Promise.all([round.settled, undo.settled]);
  if (decision.quorum) {
    return { kind: 'expired', elapsedMs: decision.decidedAt - startedAt, results };
  }
  const yes = results.filter((r) => r.outcome === 'yes').length;
  const failed = results.filter((r) => r.outcome === 'timeout' || r.outcome === 'error').length;
  if (yes + failed >= quorumOf(nodes.length)) return { kind: 'unavailable', results };
  return { kind: 'busy', holderRemainingMs: soonestExpiry(results), results };
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
