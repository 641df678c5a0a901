import type { RedisConnection } from '../driver/connection.js';
import type { FencedReply } from '../kinds/mutex/lua/acquire-fenced.js';
import type { WaitingPlace } from '../kinds/mutex/lua/acquire-in-line.js';
import type { AcquireRequest } from './attempt.js';

/**
 * Which hold of which acquisition: a node stores a hold as `<token>:<attempt>` (a hand-over
 * from the waiting line as the bare token), so that a request of one attempt that arrives
 * late cannot touch what a later attempt took (see `HOLD_VALUES`).
 */
export interface HoldId {
  /** The acquisition's random token, the same for all its attempts and its place in line. */
  readonly token: string;
  /** The attempt (1, 2...) whose hold this is. */
  readonly attempt: number;
  /**
   * Earlier attempts of the acquisition whose take got no answer from some node: their hold
   * may be there unseen. Kinds that keep holds in a set (a semaphore's permits, readers)
   * take those over with the new attempt, and the holder's release ends them too.
   */
  readonly unanswered: readonly number[];
}

/** One holder's key and hold on a node, and the TTL it asks for. */
export interface HoldOnNode extends HoldId {
  readonly key: string;
  readonly ttlMs: number;
}

/**
 * What one kind of hold (a lock, a semaphore permit, a read or a write hold) asks of each
 * node. The engine around it is the same for every kind: the fan-out with per-node
 * timeouts, validity = TTL - elapsed - drift, undo of failed attempts, the waiting line,
 * extension, loss signals and release.
 */
export interface HoldKind {
  /** What the kind is called in errors: `lock`, `permit`, `read lock`... */
  readonly noun: string;
  /** Nodes that must grant a hold for it to count, out of `nodeCount`. */
  quorum(nodeCount: number): number;
  /**
   * Asks one node for the hold: `state` 0 when it is now ours, else (> 0) how long until the
   * soonest other hold there expires, -1 held without expiry, -2 free but others are first in
   * line, -3 a later attempt of the same acquisition holds it (this request came late).
   * Marks `request.line.joined` when the request may put it in line.
   */
  take(node: RedisConnection, request: AcquireRequest, timeoutMs: number): Promise<FencedReply>;
  /** Sets our hold to expire `ttlMs` from now: 1 when set, 0 when it is not ours there. */
  extend(node: RedisConnection, hold: HoldOnNode, timeoutMs: number): Promise<number>;
  /**
   * Ends our hold: 1 when it was ours, 0 otherwise. `announce`: a real release, which wakes
   * (or hands over to) waiters; not when undoing a failed attempt.
   */
  release(
    node: RedisConnection,
    hold: Omit<HoldOnNode, 'ttlMs'> & { readonly announce: boolean; readonly line?: WaitingPlace },
    timeoutMs: number,
  ): Promise<number>;
  /**
   * Takes a waiter out of the line. `granted`: it got the hold on a quorum, and keeps
   * whatever this node gave it meanwhile; otherwise it passes that on.
   */
  leaveLine(
    node: RedisConnection,
    hold: Omit<HoldOnNode, 'ttlMs'> & { readonly granted: boolean },
    timeoutMs: number,
  ): Promise<number>;
}
