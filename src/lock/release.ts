import type { NodeResult } from '../quorum/node-result.js';
import { quorumOf } from '../quorum/tally.js';
import { deleteIfOwned, type LockContext } from './context.js';
import type { Lease, ReleaseResult } from './lease.js';

/**
 * Deletes the lease's key on every node (compare-and-delete, so another holder's key is never
 * touched). Resolves once every node answered or timed out, so that the key is gone from all
 * reachable nodes; never rejects because the lease had expired.
 */
export async function releaseLease(
  context: LockContext,
  lease: Lease,
): Promise<{ result: ReleaseResult; nodes: readonly NodeResult[] }> {
  if (lease.status === 'released') return { result: 'not-held', nodes: [] };
  const wasHeld = lease.status === 'held';
  lease.status = 'released';
  const { key, token, ttlMs, acquireResults } = lease;
  const deleting = deleteIfOwned(context, { key, token, ttlMs, acquireResults, announce: true });
  const results = await deleting.settled;
  const deleted = results.filter((result) => result.outcome === 'yes').length;
  const released = wasHeld && deleted >= quorumOf(context.nodes.length);
  return { result: released ? 'released' : 'not-held', nodes: results };
}
