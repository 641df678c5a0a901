import type { LockContext } from '../../engine/context.js';
import type { ReleaseResult } from '../../engine/contract.js';
import type { ForcedAction, ForceReleaseResult, NodeForceRelease } from '../../engine/events.js';
import { replyOfEveryNode } from '../../engine/node-replies.js';
import { lockKey } from '../../keys.js';
import { quorumOf } from '../../quorum/tally.js';
import { FORCED, forceReleaseScript } from './lua/force-release.js';

const ACTIONS: Readonly<Record<number, ForcedAction>> = {
  [FORCED.absent]: 'absent',
  [FORCED.deleted]: 'deleted',
  [FORCED.handedOver]: 'handed-over',
};

/**
 * Deletes the lock on `resource` on every node, whoever holds it, handing it to the first
 * waiter in line where one waits; each node gets at most `timeoutMs`. Reports a
 * `forceReleased` event. Never rejects: a node that fails is reported as `failed`.
 */
export async function forceReleaseLock(
  context: Pick<LockContext, 'nodes' | 'settings' | 'clock' | 'events'>,
  resource: string,
  timeoutMs: number,
): Promise<ForceReleaseResult> {
  const key = lockKey(context.settings.prefix, resource);
  const replies = await replyOfEveryNode(
    context,
    timeoutMs,
    `the forced release of "${resource}"`,
    (node, nodeTimeoutMs) => forceReleaseScript.run(node, { key }, nodeTimeoutMs),
  );
  const nodes = replies.map((answer): NodeForceRelease => {
    const { node } = answer;
    if (!('reply' in answer)) return { node, action: 'failed', error: answer.error };
    const action = ACTIONS[answer.reply];
    if (action) return { node, action };
    const error = new Error(`unexpected reply from script force-release: ${answer.reply}`);
    return { node, action: 'failed', error };
  });
  const answered = nodes.filter((n) => n.action !== 'failed');
  const found = answered.some((n) => n.action !== 'absent');
  const result: ReleaseResult =
    answered.length < quorumOf(nodes.length) ? 'failed' : found ? 'released' : 'not-held';
  const handedOver = nodes.some((n) => n.action === 'handed-over');
  const done: ForceReleaseResult = { resource, result, handedOver, nodes };
  context.events.report('forceReleased', () => done);
  return done;
}
