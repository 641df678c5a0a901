import { queueKeys, releaseChannel } from '../keys.js';
import { fanOut } from '../quorum/fan-out.js';
import type { NodeResult } from '../quorum/node-result.js';
import { leaveQueueScript } from '../scripts/leave-queue.js';
import { runScript } from '../scripts/script.js';
import { type LockContext, markStalled, nodeTimeoutFor } from './context.js';

let lastTicket = 0;

/**
 * A fair waiter's place in line: its arrival time in µs (plus a random tiebreak), chosen once
 * by the client so that every node orders the same waiters the same way. Strictly increasing
 * within this process.
 */
export function newTicket(): number {
  const ticket = Math.max(Date.now() * 1_000 + Math.floor(Math.random() * 1_000), lastTicket + 1);
  lastTicket = ticket;
  return ticket;
}

/**
 * How long a waiter that stopped asking keeps its place. It asks again at least every
 * 1.5 × `retryDelayMs` plus one attempt, which can take three node timeouts (the round, the
 * undo, waiting for a subscription); five times that, and at least a second, means it is gone.
 */
export function waiterTimeoutMs(context: LockContext, ttlMs: number): number {
  const interval = 1.5 * context.settings.retryDelayMs + 3 * nodeTimeoutFor(context, ttlMs);
  return Math.ceil(Math.max(1_000, 5 * interval));
}

/**
 * Takes `token` out of the line on every node, except those whose acquisition answer was yes
 * (the script already did). A node that misses this drops the waiter at its deadline anyway.
 */
export function leaveQueue(
  context: LockContext,
  key: string,
  token: string,
  ttlMs: number,
  acquireResults?: readonly (NodeResult | undefined)[],
) {
  const { queue, deadlines } = queueKeys(key);
  const timeoutMs = nodeTimeoutFor(context, ttlMs);
  return fanOut(context.nodes, {
    timeoutMs,
    clock: context.clock,
    run: (node, index) =>
      acquireResults?.[index]?.outcome === 'yes'
        ? Promise.resolve(0)
        : runScript(
            node,
            leaveQueueScript,
            [key, queue, deadlines],
            [token, releaseChannel(key)],
            timeoutMs,
          ),
    judge: (left) => (left === 1 ? { vote: 'yes' } : { vote: 'no' }),
    onTimeout: markStalled,
  });
}
