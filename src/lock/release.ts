import { fanOut } from '../quorum/fan-out.js';
import type { NodeResult } from '../quorum/node-result.js';
import { quorumOf } from '../quorum/tally.js';
import { extendScript } from '../scripts/extend.js';
import { runScript } from '../scripts/script.js';
import {
  deleteIfOwned,
  type LockContext,
  markStalled,
  mayHoldToken,
  nodeTimeoutFor,
} from './context.js';
import type { Lease, ReleaseResult } from './lease.js';

/**
 * Deletes the lease's key on every node (compare-and-delete, so another holder's key is never
 * touched), or with `keepMs` sets it to expire that long from now instead. Resolves once every
 * node answered or timed out, so that the key is gone from all reachable nodes; never rejects
 * because the lease had expired.
 */
export async function releaseLease(
  context: LockContext,
  lease: Lease,
  keepMs?: number,
): Promise<{ result: ReleaseResult; nodes: readonly NodeResult[] }> {
  if (lease.status === 'released') return { result: 'not-held', nodes: [] };
  const wasHeld = lease.status === 'held';
  lease.status = 'released';
  const { key, token, ttlMs, acquireResults } = lease;
  const ending =
    keepMs === undefined
      ? deleteIfOwned(context, { key, token, ttlMs, acquireResults, announce: true })
      : expireIfOwned(context, lease, keepMs);
  const results = await ending.settled;
  const applied = results.filter((result) => result.outcome === 'yes').length;
  const released = wasHeld && applied >= quorumOf(context.nodes.length);
  return { result: released ? 'released' : 'not-held', nodes: results };
}

/**
 * Sets our key to expire `keepMs` from now on every node that may hold it (compare-and-
 * PEXPIRE). Unlike an extension it claims no validity: the holder is done with the lock, and
 * the key only keeps others out until then.
 */
function expireIfOwned(context: LockContext, lease: Lease, keepMs: number) {
  const { key, token, ttlMs, acquireResults } = lease;
  const timeoutMs = nodeTimeoutFor(context, ttlMs);
  return fanOut(context.nodes, {
    timeoutMs,
    clock: context.clock,
    run: (node, index) =>
      mayHoldToken(acquireResults[index])
        ? runScript(node, extendScript, [key], [token, keepMs], timeoutMs)
        : Promise.resolve(0),
    judge: (expiring) => (expiring === 1 ? { vote: 'yes' } : { vote: 'no' }),
    onTimeout: markStalled,
  });
}
