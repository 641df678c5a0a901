import type { RedisConnection } from '../driver/connection.js';
import type { LineTicket, WaitingPlace } from '../lua/waiting-line.js';
import type { NodeResult } from '../node-result.js';

/*
 * The engine's vocabulary: what a kind of hold is (HoldKind), what an acquisition asks a node
 * (AcquireRequest) and what it answers (TakeReply), the lease behind a held lock, and what a
 * release found. Every engine file and every kind speaks these; this file imports no other
 * engine file, so nothing here can join an import circle.
 */

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
  /**
   * Whether a release may leave the hold free for anyone for `BARGE_WINDOW_MS` rather than
   * hand it over (bounded barging): a woken waiter that finds it taken back then asks again
   * once that window is over.
   */
  readonly barges?: boolean;
  /**
   * Whether its line may hand a waiter the hold for the waiter's TTL, naming the attempt it
   * counts from in the wake-up, so that the waiter holds with no confirming request (see
   * `HandOverCount`).
   */
  readonly countsHandOvers?: boolean;
  /**
   * How many may hold it at once (a semaphore's permits): carried in each hold's owner label,
   * so that `Locker.list` can say of how many. Undefined for kinds of one holder.
   */
  readonly size?: number;
  /** Nodes that must grant a hold for it to count, out of `nodeCount`. */
  quorum(nodeCount: number): number;
  /**
   * Asks one node for the hold: `state` 0 when it is now ours, else (> 0) how long until the
   * soonest other hold there expires, -1 held without expiry, -2 free but others are first in
   * line, -3 a later attempt of the same acquisition holds it (this request came late).
   * A request that may put the acquisition in line takes its ticket from
   * `request.line.enter()` right before it is sent.
   */
  take(node: RedisConnection, request: AcquireRequest, timeoutMs: number): Promise<TakeReply>;
  /**
   * Lifts the resource's fence counter on one node to at least `fence` while the hold there is
   * ours: 1 when done, 0 when the hold is not ours. Kinds that draw fencing tokens only.
   */
  raiseFence?(
    node: RedisConnection,
    hold: Omit<HoldOnNode, 'unanswered' | 'ttlMs'> & { readonly fence: bigint },
    timeoutMs: number,
  ): Promise<number>;
  /** Sets our hold to expire `ttlMs` from now: 1 when set, 0 when it is not ours there. */
  extend(node: RedisConnection, hold: HoldOnNode, timeoutMs: number): Promise<number>;
  /**
   * Ends our hold: 1 when it was ours, 0 otherwise. `announce`: a real release, which wakes
   * (or hands over to) waiters; not when undoing a failed attempt. `record`: a hash kept
   * beside the hold that names its holder's token (an election's leader record), which a real
   * release marks ended in the same step (a lock's kind only).
   */
  release(
    node: RedisConnection,
    hold: Omit<HoldOnNode, 'ttlMs'> & {
      readonly announce: boolean;
      readonly line?: WaitingPlace;
      readonly record?: string;
    },
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

/** What an acquisition asks for: the kind of hold, on which resource, under which key. */
export interface HoldTarget {
  readonly kind: HoldKind;
  readonly resource: string;
  readonly key: string;
}

/** What one attempt of an acquisition asks each node for. */
export interface AcquireRequest extends HoldId {
  /** What is held: a lock, a semaphore permit... */
  readonly kind: HoldKind;
  readonly key: string;
  readonly ttlMs: number;
  /**
   * The acquisition's place in the waiting line, when it may wait. A fair acquisition is in
   * line from its first attempt; a plain one joins when it finds the lock taken.
   */
  readonly line?: LinePass;
  /** Draw a fencing token with the lock. */
  readonly fencing: boolean;
  /**
   * Keep the fence counter at or above the node's clock in µs, so that the fence grows across
   * an empty restart of the node or a failover to a lagging replica (docs/fencing.md). Asked
   * when one node keeps the counter; on N nodes the settled majority remembers it instead.
   */
  readonly fenceFromClock: boolean;
}

/**
 * An acquisition's place in line, as a kind's take sees it. Joining is recorded when a request
 * that may join is sent, not when it is answered: its answer may never come, and the engine
 * must then still leave the line on that node, or a release would hand the hold to a waiter
 * that is gone.
 */
export interface LinePass extends WaitingPlace {
  /** The ticket to send with a request that may join the line; records that it was sent. */
  enter(): LineTicket;
  /** Whether a request of this acquisition may have joined the line on some node. */
  readonly joined: boolean;
  /** Whether the acquisition may hold from a hand-over's message (see `HandOverCount`). */
  readonly countsHandOver: boolean;
  /** The acquisition got its hold or gave up: a late answer must not join the line any more. */
  readonly done: boolean;
}

/** One node's answer to a take. */
export interface TakeReply {
  /** 0 when the hold is now ours; otherwise as {@link HoldKind.take} says. */
  readonly state: number;
  /** The node's fence counter after a fenced acquisition; undefined without one. */
  readonly fence?: bigint;
}

/**
 * The mutable state behind one {@link Lock} handle: which hold it is (the acquisition's token
 * and the attempt that got it), never leaving it.
 */
export interface Lease extends HoldId {
  /** What is held: a lock, a semaphore permit... */
  readonly kind: HoldKind;
  readonly resource: string;
  readonly key: string;
  /** TTL asked for at acquisition; the default for extensions. */
  readonly ttlMs: number;
  /** Monotonic instant at which the acquisition round started. */
  readonly acquiredAt: number;
  /** Monotonic instant until which the lease may be trusted. */
  deadline: number;
  /**
   * Monotonic instant before which a release only sets the key to expire then (`minHoldMs`;
   * raised once for a lock of a complete `acquireAll` group).
   */
  keepUntil: number;
  /** The fencing token, when the lock was acquired with `fencing: true`. */
  readonly fence: bigint | undefined;
  /** Each node's answer to the winning acquisition round (late answers keep arriving). */
  readonly acquireResults: readonly (NodeResult | undefined)[];
  status: 'held' | 'released' | 'lost';
}

/** What {@link Lock.release} found. */
export type ReleaseResult =
  /** A majority of nodes deleted our key. */
  | 'released'
  /** A majority said the key is not ours (the lease had expired or been taken), or it was released before. */
  | 'not-held'
  /**
   * Too many nodes failed or did not answer to tell (the `released` event's `nodes` say why:
   * a NOPERM, a node down...). Our key may stay on them until its TTL runs out.
   */
  | 'failed';
