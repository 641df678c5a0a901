import type { LockContext } from '../../engine/context.js';
import type { ReleaseResult } from '../../engine/contract.js';
import { warn } from '../../engine/events.js';
import { askEveryNode, nodeTimeoutFor } from '../../engine/every-node.js';
import { type Lock, leaseOf, renewLock } from '../../engine/lock.js';
import { LockLostError, NoQuorumError } from '../../errors.js';
import { quorumOf } from '../../quorum/tally.js';
import type { ElectionKeys } from './election-keys.js';
import { type ElectionSettings, validateValue } from './election-options.js';
import { announceScript } from './lua/announce.js';
import { COUNTER_RAISED, proclaimScript } from './lua/proclaim.js';

/**
 * Leadership of an election, from `campaign`: a fenced lock on the election, renewed every
 * `retryMs`, whose term is the lock's fencing token. Lead only while {@link signal} has not
 * aborted: it fires as soon as leadership may be lost, and before the lease ends on the nodes
 * when renewals stop succeeding.
 */
export class Leadership implements AsyncDisposable {
  /** The election's name. */
  readonly name: string;
  /**
   * This leadership's term: larger than every earlier leader's, on every node. Send it with
   * each write to what the leader controls, and have that refuse writes carrying a smaller
   * one (see `fencedWrite`): a stale leader's writes are then refused.
   */
  readonly term: bigint;
  readonly #context: LockContext;
  readonly #lock: Lock;
  readonly #keys: ElectionKeys;
  readonly #settings: ElectionSettings;
  readonly #controller = new AbortController();
  #value = '';
  #version = 0;
  /** Monotonic instant from which `renewDeadlineMs` counts: the last confirmed renewal. */
  #renewedFrom: number;
  #renewTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #ended = false;

  /** @internal Created by `Election.campaign`; not part of the public API. */
  constructor(context: LockContext, lock: Lock, keys: ElectionKeys, settings: ElectionSettings) {
    this.name = keys.name;
    this.term = lock.fence ?? 0n;
    this.#context = context;
    this.#lock = lock;
    this.#keys = keys;
    this.#settings = settings;
    this.#renewedFrom = this.#leaseStart();
    const { signal } = lock;
    if (signal.aborted) queueMicrotask(() => this.#lose(signal.reason));
    else signal.addEventListener('abort', () => this.#lose(signal.reason), { once: true });
    this.#armDeadline();
    this.#scheduleRenewal();
  }

  /**
   * Aborts with a `LockLostError` when this leadership ends other than by {@link resign}:
   * no renewal confirmed within `renewDeadlineMs` (a leader cut off from Redis, or whose
   * process was paused), a majority of nodes no longer holding it, its validity running out,
   * or the locker closing. Stop acting as the leader when it fires. Read after the renew
   * deadline, it is aborted at once, even if a busy event loop kept its timer from running.
   */
  get signal(): AbortSignal {
    if (!this.#ended && this.#context.clock.now() >= this.#renewDeadline()) this.#deadlinePassed();
    return this.#controller.signal;
  }

  /** The value this leader last proclaimed (at `campaign`, or with {@link proclaim}). */
  get value(): string {
    return this.#value;
  }

  /**
   * Makes `value` the leader's value, and tells observers. Resolves once a majority of nodes
   * stored it. Rejects with a `LockLostError` (and the signal fires) when a majority says
   * this leadership is over, with a `NoQuorumError` when too few nodes answered (the
   * leadership stands; the value may have reached some nodes, and readers may see it).
   */
  proclaim(value: string): Promise<void> {
    validateValue(value);
    if (this.#ended) {
      const why = this.#controller.signal.aborted ? 'it was lost' : 'it was resigned';
      return Promise.reject(new LockLostError(this.name, `proclaiming after ${why}`));
    }
    return this.#context.shutdown.track(() => this.#proclaim(value));
  }

  /**
   * Steps down: stops renewing and releases the leadership on every node, handing it at once
   * to the candidate that has waited longest, and tells observers. Does not fire the signal.
   * Resolves as `Lock.release` does (`'not-held'` when it had already been lost).
   */
  async resign(): Promise<ReleaseResult> {
    this.#stop();
    const result = await this.#lock.release();
    await this.#announce();
    return result;
  }

  /** Resigns at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.resign();
  }

  async #proclaim(value: string): Promise<void> {
    const { token, attempt, key } = leaseOf(this.#lock);
    const version = ++this.#version;
    const { lock: _lock, leader: leaderKey, changes: channel } = this.#keys;
    const input = { key, leaderKey, token, attempt, term: this.term, version, value, channel };
    const round = askEveryNode(
      this.#context,
      nodeTimeoutFor(this.#context, this.#settings.leaseMs),
      (node, timeoutMs) =>
        proclaimScript.run(node, input, timeoutMs).then((reply) => {
          if (reply === COUNTER_RAISED) this.#counterRaised(node.name);
          return reply;
        }),
    );
    const { quorum, results } = await round.decided;
    const answered = results.filter((r) => r !== undefined);
    if (quorum) {
      if (version === this.#version) this.#value = value;
      return;
    }
    const needed = quorumOf(this.#context.nodes.length);
    if (answered.filter((r) => r.outcome === 'no').length >= needed) {
      const lost = new LockLostError(
        this.name,
        'a majority of nodes no longer holds it, or has recorded a later leader',
        answered,
      );
      this.#lose(lost);
      throw lost;
    }
    const message = `Proclaiming a value in "${this.name}": fewer than ${needed} of ${this.#context.nodes.length} node(s) confirmed`;
    throw new NoQuorumError(this.name, message, answered);
  }

  /**
   * `node` recorded a leader whose term is not below this one's, and its fence counter was
   * below that record: the counter went back (deleted, or lost in a restart without
   * persistence), and the proclaim raised it. Loud, as state that fences depend on was lost;
   * once per node and loss, since the raised counter no longer trails the record.
   */
  #counterRaised(node: string): void {
    const message =
      `election "${this.name}" has a leader recorded here with a term not below this ` +
      `campaign's ${this.term}, above the fence counter: the counter went back (deleted, or ` +
      'lost in a restart without persistence) and was raised to the recorded term';
    warn(this.#context.events, node, 'FENCE_COUNTER_BEHIND', message);
  }

  /** Renews every `retryMs`; a renewal that fails is retried until the renew deadline. */
  #scheduleRenewal(): void {
    if (this.#ended) return;
    this.#renewTimer = setTimeout(() => this.#renew(), this.#settings.retryMs);
    this.#renewTimer.unref();
  }

  #renew(): void {
    if (this.#ended) return;
    renewLock(this.#lock, this.#settings.leaseMs).then(
      (confirmed) => {
        if (confirmed && !this.#ended) {
          this.#renewedFrom = this.#leaseStart();
          this.#armDeadline();
        }
        this.#scheduleRenewal();
      },
      (error: unknown) => {
        // Lost (the lock's signal has fired and reached #lose), or the locker closed.
        const reason =
          error instanceof LockLostError
            ? error
            : new LockLostError(this.name, 'its locker was closed');
        this.#lose(reason);
      },
    );
  }

  /**
   * When the current lease began, less the drift allowance: its validity deadline minus
   * `leaseMs`. Never later than the start of the request that set it.
   */
  #leaseStart(): number {
    const { clock } = this.#context;
    const now = clock.now();
    return now + this.#lock.remainingMs() - this.#settings.leaseMs;
  }

  #renewDeadline(): number {
    return this.#renewedFrom + this.#settings.renewDeadlineMs;
  }

  #armDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    if (this.#ended) return;
    const fire = () => {
      const early = this.#renewDeadline() - this.#context.clock.now();
      // Timers may fire a little early: never give up before the deadline.
      if (early > 0) {
        this.#deadlineTimer = setTimeout(fire, Math.ceil(early));
        this.#deadlineTimer.unref();
        return;
      }
      this.#deadlinePassed();
    };
    const delayMs = Math.max(0, Math.ceil(this.#renewDeadline() - this.#context.clock.now()));
    this.#deadlineTimer = setTimeout(fire, delayMs);
    this.#deadlineTimer.unref();
  }

  #deadlinePassed(): void {
    const { renewDeadlineMs } = this.#settings;
    const why = `no renewal was confirmed within renewDeadlineMs (${renewDeadlineMs} ms)`;
    this.#lose(new LockLostError(this.name, why));
  }

  /**
   * Ends the leadership as lost: the signal fires first, and only then is the lock released
   * (when the locker is not closing, which releases it itself), so that the next leader is
   * let in only after this one was told to stop.
   */
  #lose(reason: unknown): void {
    if (this.#ended) return;
    this.#stop();
    this.#controller.abort(reason);
    if (this.#context.shutdown.closed) return;
    // Best effort: a node that is cut off keeps the lease until its TTL.
    this.#lock
      .release()
      .then(() => this.#announce())
      .catch(() => undefined);
  }

  #stop(): void {
    this.#ended = true;
    clearTimeout(this.#renewTimer);
    clearTimeout(this.#deadlineTimer);
  }

  /**
   * Tells observers the leader changed. A hint only: a node that misses it leaves its
   * observers to notice at their next timed read.
   */
  async #announce(): Promise<void> {
    if (this.#context.shutdown.closed) return;
    const { leader: leaderKey, changes: channel } = this.#keys;
    const round = askEveryNode(
      this.#context,
      nodeTimeoutFor(this.#context, this.#settings.leaseMs),
      (node, timeoutMs) => announceScript.run(node, { leaderKey, channel }, timeoutMs),
    );
    await round.settled;
  }
}
