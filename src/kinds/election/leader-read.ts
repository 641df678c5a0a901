import { connectionsOpened } from '../../engine/acquire.js';
import type { LockContext } from '../../engine/context.js';
import { askEveryNode, nodeTimeoutFor } from '../../engine/every-node.js';
import { NoQuorumError } from '../../errors.js';
import { quorumOf } from '../../quorum/tally.js';
import type { ElectionKeys } from './election-keys.js';
import { type NodeLeader, readLeaderScript } from './lua/read-leader.js';

/** The leader of an election: what it proclaimed, and its term. */
export interface Leader {
  /** The value the leader proclaimed (at `campaign`, or since with `proclaim`). */
  readonly value: string;
  /**
   * The leadership's term: its fencing token, larger than every earlier leader's. Send it
   * with writes so that a store can refuse a stale leader's (see `fencedWrite`).
   */
  readonly term: bigint;
}

/**
 * Reads the leader from every node (each with the per-node timeout for a lease of `leaseMs`):
 * the leader whose term a majority of all nodes reports, or `null`. Rejects with
 * {@link NoQuorumError} when fewer than a majority answered, and with the identity check's
 * refusal (an `InvalidArgumentError` naming a server listed twice, say).
 */
export async function readLeader(
  context: Pick<
    LockContext,
    'nodes' | 'settings' | 'clock' | 'identities' | 'connected' | 'shutdown'
  >,
  keys: ElectionKeys,
  leaseMs: number,
): Promise<Leader | null> {
  const { identities } = context;
  const closed = context.shutdown.signal;
  const stops = { what: `Reading the leader of "${keys.name}"`, signal: undefined, closed };
  // A new locker's first read waits for its connections, as an acquisition does: until they
  // are up, no node can say which server it is.
  const connecting = connectionsOpened(context, 0, stops);
  if (connecting) await connecting;
  // A node counts only as it would vote (docs/safety.md, "Identities"): one whose server
  // changed (a failover to a replica that missed the resign's release, say) may show a
  // leadership that ended, and one that has not said which server it is may be another
  // node's. A read grants no lease, so it records none (a user that may only read gets no
  // NOPERM); a configuration the check refuses (one server listed twice) is refused here.
  const nodeTimeoutMs = nodeTimeoutFor(context, leaseMs);
  const identifying = identities.checkForRead(context, nodeTimeoutMs);
  if (identifying) await identifying;
  const views: (NodeLeader | null | undefined)[] = context.nodes.map(() => undefined);
  const input = { key: keys.lock, leaderKey: keys.leader };
  const round = askEveryNode(
    context,
    nodeTimeoutMs,
    (node, timeoutMs, index) => {
      const unreadable = identities.unreadable(index);
      if (unreadable) return Promise.reject(unreadable);
      return readLeaderScript.run(node, input, timeoutMs).then((view) => {
        views[index] = view;
      });
    },
    { judge: () => ANSWERED },
  );
  const results = await round.settled;
  const leader = leaderOf(views, context.nodes.length);
  if (leader === undefined) {
    const message = `Reading the leader of "${keys.name}": fewer than ${quorumOf(context.nodes.length)} of ${context.nodes.length} node(s) answered.`;
    throw new NoQuorumError(keys.name, message, results);
  }
  return leader;
}

/**
 * The verdict of the nodes' views (`undefined`: no answer): the term that a majority of
 * `nodeCount` reports, with the value of its latest proclaim among them; `null` when no term
 * has a majority; `undefined` when too few answered to tell.
 */
export function leaderOf(
  views: readonly (NodeLeader | null | undefined)[],
  nodeCount: number,
): Leader | null | undefined {
  const quorum = quorumOf(nodeCount);
  const answered = views.filter((view) => view !== undefined);
  if (answered.length < quorum) return undefined;
  for (const view of answered) {
    if (!view) continue;
    const same = answered.filter((other) => other?.term === view.term) as NodeLeader[];
    if (same.length < quorum) continue;
    const latest = same.reduce((a, b) => (b.version > a.version ? b : a));
    return { value: latest.value, term: latest.term };
  }
  return null;
}

const ANSWERED = Object.freeze({ vote: 'yes' as const });
