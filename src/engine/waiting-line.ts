import type { LineTicket } from '../lua/waiting-line.js';
import type { NodeResult } from '../node-result.js';
import type { HoldId, HoldKind, LinePass } from './contract.js';
import { askEveryNode, type NodeSet, nodeTimeoutFor } from './every-node.js';
import type { Shutdown } from './shutdown.js';
import type { WakeUps } from './wake-ups.js';

let lastTicket = 0;

/**
 * A waiter's place in line: its arrival time in µs (plus a random tiebreak), chosen once
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
 * whatever the TTL, so that a waiter that died holds up the lock that long at most. A live
 * waiter asks every 1.5 × max(`retryDelayMs`, this / 4) at the latest (see `pollingMs`), plus
 * the attempt itself; one that was dropped because its nodes answered slowly takes its old
 * place back on its next attempt (the line is ordered by its ticket), so a drop costs it
 * nothing.
 */
function waiterTimeoutMs({ settings }: Pick<NodeSet, 'settings'>): number {
  return Math.max(1_000, 5 * settings.retryDelayMs);
}

/** What a place in line uses of its locker. */
interface LineContext extends NodeSet {
  readonly wakeUps: WakeUps;
  readonly shutdown: Shutdown;
}

/** Whose place in which line. */
interface LineRequest {
  readonly kind: HoldKind;
  readonly key: string;
  readonly token: string;
  readonly ttlMs: number;
}

/**
 * Takes `token` out of the line on every node, except those whose acquisition answer was yes
 * (the script already did). With `acquireResults` the lock was granted: a node that holds it
 * (its yes came after the verdict) keeps it. Always sent, like the deletes of our own keys,
 * also to a node that stopped answering: an earlier attempt may have put us in line there,
 * and a release there would hand the lock to a waiter that is gone. A node that misses this
 * anyway drops the waiter at its deadline.
 */
function leaveQueue(
  context: NodeSet,
  { kind, key, ttlMs }: LineRequest,
  { token, attempt, unanswered }: HoldId,
  acquireResults?: readonly (NodeResult | undefined)[],
) {
  const granted = acquireResults !== undefined;
  const hold = { key, token, attempt, unanswered, granted };
  return askEveryNode(context, nodeTimeoutFor(context, ttlMs), (node, timeoutMs, index) =>
    acquireResults?.[index]?.outcome === 'yes'
      ? Promise.resolve(0)
      : kind.leaveLine(node.forced, hold, timeoutMs),
  );
}

/**
 * An acquisition's place in the waiting line, from the attempt that joined it (a fair
 * acquisition's first; a plain one's first busy one) until it got the lock (then the nodes
 * that granted it took it out of their line, and the others must too) or gave up (then it
 * leaves the line everywhere at once, so that a release does not hand the lock to a waiter
 * that is gone).
 */
export class PlaceInLine implements LineTicket, LinePass {
  readonly ticket = newTicket();
  readonly waiterTimeoutMs: number;
  /** Whether an attempt may have put this acquisition in line on some node. */
  joined: boolean;
  /** The acquisition got the lock or gave up: no request may join the line any more. */
  done = false;

  /**
   * `fair`: in line from the first attempt. A plain acquisition joins with the attempt that
   * finds the lock taken: its first `SET NX` takes a free lock in one round trip (under
   * contention, mostly a worker taking back the lock it just released within the barging
   * window). `countsHandOver`: see `HandOverCount`.
   */
  constructor(
    private readonly context: LineContext,
    private request: LineRequest,
    readonly fair: boolean,
    readonly countsHandOver = false,
  ) {
    this.waiterTimeoutMs = waiterTimeoutMs(context);
    this.joined = fair;
  }

  /** The acquisition's token, changed before its first attempt was sent (see `Acquisition`). */
  set token(token: string) {
    this.request = { ...this.request, token };
  }

  /** The lock whose line this is. */
  get key(): string {
    return this.request.key;
  }

  /** How a release wakes this waiter (read anew for each request: a Cluster may fall back). */
  get wakeChannel(): string {
    return this.context.wakeUps.wakeFor(this.request.key);
  }

  /** The ticket for a request that may join the line: from now on the line must be left. */
  enter(): LineTicket {
    this.joined = true;
    return this;
  }

  /**
   * The lock was granted, to `hold`: the nodes that said no take us out of their line too.
   */
  granted(hold: HoldId, acquireResults: readonly (NodeResult | undefined)[]): void {
    this.done = true;
    if (!this.joined) return;
    this.joined = false;
    if (acquireResults.every((result) => result?.outcome === 'yes')) return; // all left already
    const { context, request } = this;
    void context.shutdown.track(() => leaveQueue(context, request, hold, acquireResults).settled);
  }

  /**
   * Leaves the line on every node, unless the lock was granted, passing on whatever a node
   * has handed `last` (the acquisition's last attempt) meanwhile.
   */
  leave(last: HoldId): Promise<unknown> | undefined {
    this.done = true;
    if (!this.joined) return undefined; // the usual case: nothing to wait for
    this.joined = false;
    return leaveQueue(this.context, this.request, last).settled;
  }
}
