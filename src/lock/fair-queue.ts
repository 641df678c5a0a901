import type { NodeResult } from '../quorum/node-result.js';
import { leaveQueueScript } from '../scripts/leave-queue.js';
import type { LockContext } from './context.js';
import { askEveryNode } from './every-node.js';

let lastTicket = 0;

/**
 * A fair waiter's place in line: its arrival time in µs (plus a random tiebreak), chosen once
 * by the client so that every node orders the same waiters the same way. Strictly increasing
 * within this process.
 */
function newTicket(): number {
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
function waiterTimeoutMs(context: LockContext): number {
  return Math.max(1_000, 5 * context.settings.retryDelayMs);
}

/**
 * Takes `token` out of the line on every node, except those whose acquisition answer was yes
 * (the script already did). A node that misses this drops the waiter at its deadline anyway.
 */
function leaveQueue(
  context: LockContext,
  key: string,
  token: string,
  ttlMs: number,
  acquireResults?: readonly (NodeResult | undefined)[],
) {
  return askEveryNode(context, ttlMs, (node, timeoutMs, index) =>
    acquireResults?.[index]?.outcome === 'yes'
      ? Promise.resolve(0)
      : leaveQueueScript.run(node, { key, token }, timeoutMs),
  );
}

/**
 * A fair waiter's place in line, from its first attempt until it got the lock (then the
 * nodes that granted it took it out of their line, and the others must too) or gave up
 * (then it leaves the line everywhere at once, so that the next waiter need not wait for its
 * place to expire).
 */
export class PlaceInLine {
  readonly ticket = newTicket();
  readonly waiterTimeoutMs: number;
  #inLine = true;

  constructor(
    private readonly context: LockContext,
    private readonly request: {
      readonly key: string;
      readonly token: string;
      readonly ttlMs: number;
    },
  ) {
    this.waiterTimeoutMs = waiterTimeoutMs(context);
  }

  /** The lock was granted: the nodes that said no take us out of their line too. */
  granted(acquireResults: readonly (NodeResult | undefined)[]): void {
    this.#inLine = false;
    const { context } = this;
    const { key, token, ttlMs } = this.request;
    void context.shutdown.track(
      () => leaveQueue(context, key, token, ttlMs, acquireResults).settled,
    );
  }

  /** Leaves the line on every node, unless the lock was granted. */
  async leave(): Promise<void> {
    if (!this.#inLine) return;
    this.#inLine = false;
    const { key, token, ttlMs } = this.request;
    await leaveQueue(this.context, key, token, ttlMs).settled;
  }
}
