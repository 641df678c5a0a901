import type { LockContext } from './context.js';
import { deleteIfOwned } from './context.js';
import type { Lease, ReleaseResult } from './lease.js';

/**
 * Deletes the lease's key on every node (compare-and-delete, so another holder's key is never
 * touched). Resolves as soon as the outcome is certain; never rejects because the lease had
 * expired.
 */
export async function releaseLease(context: LockContext, lease: Lease): Promise<ReleaseResult> {
  if (lease.status === 'released') return 'not-held';
  const wasHeld = lease.status === 'held';
  lease.status = 'released';
  const decision = await deleteIfOwned(context, lease.key, lease.token, lease.ttlMs).decided;
  return decision.quorum && wasHeld ? 'released' : 'not-held';
}
