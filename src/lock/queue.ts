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
 * How long a waiter that stopped asking keeps its place: max(1 s, 5 × `retryDelayMs`),
 * whatever the TTL, so that a waiter that died holds up a free lock that long at most. A live
 * waiter asks every 1.5 × `retryDelayMs` at the latest, plus the attempt itself; one that was
 * dropped because its nodes answered slowly takes its old place back on its next attempt
 * (the line is ordered by its ticket), so a drop costs it nothing.
 */
export function waiterTimeoutMs(context: LockContext): number {
  return Math.max(1_000, 5 * context.settings.retryDelayMs);
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
