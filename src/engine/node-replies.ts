import type { StallGuard } from '../driver/stall-guard.js';
import { NoReplyError } from '../errors.js';
import { fanOut } from '../quorum/fan-out.js';
import type { NodeSet } from './context.js';

/** One node's reply to {@link replyOfEveryNode}, or why it has none. */
export type NodeReply<T> =
  | { readonly node: string; readonly reply: T }
  | { readonly node: string; readonly error: Error };

/**
 * How much longer than the fan-out's timer a request's own wait may run (for a connection
 * still being opened), so that a node that stays silent counts as silent (a `NoReplyError`)
 * rather than as not connected; a request still unsent by then never is.
 */
const OWN_WAIT_MARGIN_MS = 50;

/**
 * The nodes of an operator's read, and which of them it counts: `counted()`, called once the
 * nodes answered (their connections are open then), resolves to a function that says why node
 * `index`'s view does not count, or `undefined` when it does; it rejects when the
 * configuration is refused (one server listed twice). See `countedNodes`.
 */
export interface ReadNodeSet extends NodeSet {
  readonly counted?: () => Promise<(index: number) => Error | undefined>;
}

/**
 * Sends `request` to every node at once and resolves each node's reply, for operations that
 * want what every node says rather than a vote (an inspection, a forced release). Each node
 * gets at most `timeoutMs`, connecting included; one silent for longer gets a
 * `NoReplyError` naming `what`, and no new work until it answers. A node that answered but
 * whose view `context.counted` does not count gets why as its error instead of its reply.
 * Never rejects for a node; rejects only with `counted`'s refusal.
 */
export async function replyOfEveryNode<T>(
  context: ReadNodeSet,
  timeoutMs: number,
  what: string,
  request: (node: StallGuard, timeoutMs: number) => Promise<T>,
): Promise<NodeReply<T>[]> {
  const replies: T[] = [];
  const round = fanOut(context.nodes, {
    timeoutMs,
    clock: context.clock,
    run: async (node, _timeoutMs, index) => {
      replies[index] = await request(node, timeoutMs + OWN_WAIT_MARGIN_MS);
    },
    judge: () => YES,
    onTimeout: (node) => node.markStalled(),
  });
  const results = await round.settled;
  const uncounted = context.counted ? await context.counted() : undefined;
  return results.map((result, index): NodeReply<T> => {
    const { node } = result;
    if (result.outcome === 'yes') {
      const why = uncounted?.(index);
      return why ? { node, error: why } : { node, reply: replies[index] as T };
    }
    if (result.outcome === 'error') return { node, error: result.error };
    return { node, error: new NoReplyError(node, what, timeoutMs) };
  });
}

const YES = Object.freeze({ vote: 'yes' as const });
