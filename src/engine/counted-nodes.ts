import type { LockContext } from './context.js';
import type { ReadNodeSet } from './node-replies.js';

/**
 * The nodes of an operator's read (`Locker.inspect`, `Locker.list`), which counts what they
 * answered as `Election.leader` would (docs/safety.md, "Identities"): once they answered (a
 * new locker's connections are then open), the nodes' identity check runs when one is due,
 * with the read's per-node timeout; one server listed twice rejects the read with an
 * `InvalidArgumentError` naming it, and a node that became another server (a failover, a
 * restart with its data) gets why as its error, until every lease the earlier one could have
 * granted has run out. A node that answered but has not said which server it is (its INFO
 * was not answered within the timeout) is not counted either; one whose read failed tells
 * that failure, its real cause, whatever the check says of it. A read grants nothing, so it
 * records no lease. With `onEvictionRisk: 'refuse'`, a refused node rejects the read as it
 * rejects `Election.leader` (the refusal is the check's only answer then: it would hide one
 * server listed twice).
 */
export function countedNodes(
  context: Pick<LockContext, 'nodes' | 'settings' | 'clock' | 'identities'>,
  nodeTimeoutMs: number,
): ReadNodeSet {
  const { identities } = context;
  return {
    nodes: context.nodes,
    settings: context.settings,
    clock: context.clock,
    counted: async () => {
      const identifying = identities.checkForRead(context, nodeTimeoutMs);
      if (identifying) await identifying;
      return (index) => identities.unreadable(index);
    },
  };
}
