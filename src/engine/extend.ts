import { NotSentError } from '../driver/connection.js';
import type { StallGuard } from '../driver/stall-guard.js';
import { LockLostError } from '../errors.js';
import type { NodeResult } from '../node-result.js';
import { validityMs } from '../quorum/validity.js';
import { misconfiguredOperation, misconfiguredQuorum } from './configuration-failure.js';
import type { IdentifiedNodes } from './context.js';
import type { Lease } from './contract.js';
import { askEveryNode, nodeTimeoutFor } from './every-node.js';
import { deleteIfOwned } from './release.js';
import { awaitReplicas } from './replicas.js';

/**
 * Pushes the lease's expiry to `ttlMs` from now on every node. It counts only with a majority
 * that answered before the current lease ran out, and validity > 0; otherwise the lease is
 * lost: `lose` hears it first, then the partial extensions are deleted again, and this
 * rejects with {@link LockLostError}.
 *
 * `unconfirmedIsKept`: when the majority is missing only because nodes failed or did not
 * answer (fewer than a majority said the hold is not ours), resolve `undefined` and leave the
 * lease as it was, valid until its current deadline: a renewal that may be retried (how an
 * election's leader renews until its renew deadline). The nodes that did extend keep our hold
 * longer, which only keeps others out; the next release deletes it there.
 *
 * When configuration errors alone leave too few nodes for a majority (an ACL user without a
 * command the extension runs), nothing says the hold is gone: the lease stays as it was,
 * valid until its current deadline, and this rejects with a `NoQuorumError` naming each
 * node's error, not with a loss.
 */
export async function extendLease(
  context: IdentifiedNodes,
  lease: Lease,
  ttlMs: number,
  lose: (error: LockLostError) => void,
  unconfirmedIsKept = false,
): Promise<readonly (NodeResult | undefined)[] | undefined> {
  const { clock, settings } = context;
  if (lease.status !== 'held') {
    throw new LockLostError(lease.resource, `it was ${lease.status} before the extension`);
  }
  const startedAt = clock.now();
  if (startedAt >= lease.deadline) {
    lease.status = 'lost';
    throw new LockLostError(lease.resource, 'its validity ran out before the extension');
  }
  const { kind, key, token, attempt, unanswered } = lease;
  // Takes back what this extension set, when the lease is over after all.
  const undo = () => deleteIfOwned(context, { ...lease, ttlMs }, true).settled;
  const hold = { key, token, attempt, unanswered, ttlMs };
  const extendOnNode = async (node: StallGuard, timeoutMs: number, index: number) => {
    // A node extends a lease only as long as it has on record (see LeaseRecords): a longer
    // extension is recorded first, and a node whose record failed takes no part.
    if (!context.identities.recorded(index, ttlMs)) {
      throw new NotSentError(
        `${node.name} has not recorded the ${ttlMs} ms lease (the lease record that guards against its restarts): not extended there`,
      );
    }
    const until = clock.now() + timeoutMs;
    const extended = await kind.extend(node, hold, timeoutMs);
    if (extended === 1) await awaitReplicas(node, settings.replicaAcks, clock, until);
    return extended;
  };
  const quorum = kind.quorum(context.nodes.length);
  const round = askEveryNode(context, nodeTimeoutFor(context, ttlMs), extendOnNode, { quorum });
  const decision = await round.decided;
  const validity = validityMs(ttlMs, startedAt, decision.decidedAt, settings.driftFactor);
  if (lease.status !== 'held') {
    // Released or lost while the extension was in flight: take back what it extended.
    await undo();
    throw new LockLostError(lease.resource, `it was ${lease.status} during the extension`);
  }
  if (decision.quorum && validity > 0 && decision.decidedAt < lease.deadline) {
    lease.deadline = decision.decidedAt + validity;
    return decision.results;
  }
  const refusals = decision.results.filter((r) => r?.outcome === 'no').length;
  if (unconfirmedIsKept && !decision.quorum && refusals < quorum && clock.now() < lease.deadline) {
    return undefined;
  }
  if (misconfiguredQuorum(decision.results, quorum) && clock.now() < lease.deadline) {
    const results = await round.settled;
    const leftMs = Math.max(0, Math.round(lease.deadline - clock.now()));
    const consequence = `the lock is still held for its remaining ${leftMs} ms of validity, and then lost`;
    throw misconfiguredOperation(lease.resource, 'Extending', consequence, results, quorum);
  }
  lease.status = 'lost';
  const reason = !decision.quorum
    ? `fewer than ${quorum} of ${context.nodes.length} node(s) confirmed the extension`
    : 'the extension was confirmed too late';
  // The holder hears of the loss before anything of the lease is deleted: a delete (or the
  // hand-over a release makes) lets the next holder in at once, and the holder's signal must
  // have fired by then. Its error names the nodes that had answered; the rejection, all.
  lose(
    new LockLostError(
      lease.resource,
      reason,
      decision.results.filter((r) => r !== undefined),
    ),
  );
  const [results] = await Promise.all([round.settled, undo()]);
  throw new LockLostError(lease.resource, reason, results);
}
