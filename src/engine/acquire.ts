import type { AcquireSettings } from '../config/acquire-settings.js';
import { CONNECT_GRACE_MS, CONNECT_WAIT_MS, NotSentError } from '../driver/connection.js';
import { LockerClosedError } from '../errors.js';
import { BARGE_WINDOW_MS } from '../lua/waiting-line.js';
import type { NodeResult } from '../node-result.js';
import {
  absentSinceStart,
  failure,
  misconfigured,
  outcomeOf,
  type Refusal,
} from './acquire-failure.js';
import { type Attempt, attemptAcquire } from './attempt.js';
import type { LockContext } from './context.js';
import type { AcquireRequest, HoldTarget, Lease } from './contract.js';
import { nodeTimeoutFor } from './every-node.js';
import { countsHandOvers, HandOverCount } from './hand-over-count.js';
import { Lock, type LockLifecycle } from './lock.js';
import { deleteIfOwned } from './release.js';
import { pause, pollingMs, retryDelay } from './retry-pace.js';
import { sleep, stopped, type WaitStops } from './sleep.js';
import { traced } from './telemetry.js';
import { acquisitionToken, labelOf } from './token.js';
import { Waiter } from './waiter.js';
import { PlaceInLine } from './waiting-line.js';

/**
 * Acquires `resource`: attempts until one succeeds, pausing a random delay between attempts
 * while the resource is busy or nodes fail, until `waitMs` has passed. A pause never runs
 * past the deadline, past the current holder's remaining lease, or past an abort of `signal`
 * or the locker's close, and a release of the resource ends it at once.
 */
export function acquireLock(
  context: LockContext,
  target: HoldTarget,
  settings: AcquireSettings,
): Promise<Lock> {
  const { telemetry } = context.settings;
  if (!telemetry) return new Acquisition(context, target, settings).run();
  let attempts = 0;
  let nodes: readonly (NodeResult | undefined)[] = [];
  const observe = (attempt: Attempt) => {
    attempts++;
    nodes = attempt.results;
  };
  const hold = { resource: target.resource, kind: target.kind.noun };
  return traced(
    telemetry,
    'acquire',
    hold,
    () => new Acquisition(context, target, settings, observe).run(),
    {
      ok: () => ({ outcome: 'acquired', attempts, nodes }),
      failed: (error) => ({ outcome: outcomeOf(error), attempts, nodes, error: error as Error }),
    },
  );
}

/**
 * One acquisition, from its first attempt to the lock or the error: each round is one
 * attempt, then either {@link Acquisition.acquired} or {@link Acquisition.refused} (which
 * throws when the wait is over, or pauses until the next round).
 */
class Acquisition {
  readonly #stops: WaitStops;
  /**
   * An acquisition that may wait takes a place in line: a release hands the lock over to the
   * first waiter. One that may not (tryAcquire) never joins, so never needs to leave.
   */
  readonly #line: PlaceInLine | undefined;
  readonly #startedAt: number;
  readonly #deadline: number;
  #request: AcquireRequest;
  #attempts = 0;
  /** Whether the locker's channel was subscribed when the last attempt began. */
  #subscribed = false;
  /** Hears the release that hands us the lock: from the first busy attempt on. */
  #waiter: Waiter | undefined;
  /** Whether a hand-over's message may give us the lock, with what it counts from. */
  readonly #handOvers: HandOverCount | undefined;
  /** Whether the token's label gives its start in this process's time (see #inServerTime). */
  #inLocalTime: boolean;

  constructor(
    private readonly context: LockContext,
    private readonly target: HoldTarget,
    private readonly settings: AcquireSettings,
    private readonly observe?: (attempt: Attempt) => void,
  ) {
    const { kind, resource, key } = target;
    const { ttlMs, waitMs, signal, fair, fencing, owner } = settings;
    this.#stops = { what: `Acquiring "${resource}"`, signal, closed: context.shutdown.signal };
    const clockOffsetMs = context.identities.clockOffsetMs();
    this.#inLocalTime = owner !== undefined && clockOffsetMs === undefined;
    const token = acquisitionToken(owner, kind.size, clockOffsetMs);
    const counts = (fair || waitMs > 0) && countsHandOvers(context, target, settings);
    this.#handOvers = counts ? new HandOverCount(context, ttlMs) : undefined;
    this.#line =
      fair || waitMs > 0
        ? new PlaceInLine(context, { kind, key, token, ttlMs }, fair, counts)
        : undefined;
    const line = this.#line ? { line: this.#line } : {};
    // On N nodes the fence is settled on a majority, which remembers it when one node forgets
    // (and a counter per node's clock would make the nodes disagree, and cost a raise each
    // time); one node must remember it alone (docs/fencing.md, "Restarts and failovers").
    const fenceFromClock = fencing && context.nodes.length === 1;
    this.#request = {
      kind,
      key,
      token,
      attempt: 1,
      unanswered: NONE,
      ttlMs,
      fencing,
      fenceFromClock,
      ...line,
    };
    this.#startedAt = context.clock.now();
    this.#deadline = this.#startedAt + waitMs;
  }

  async run(): Promise<Lock> {
    const { context } = this;
    if (context.shutdown.closed) throw new LockerClosedError(this.#stops.what);
    context.shutdown.begin();
    try {
      // Each step returns a promise only when it has something to wait for: the uncontended
      // path does not even await a resolved promise.
      const connecting = connectionsOpened(context, this.settings.waitMs, this.#stops);
      if (connecting) await connecting;
      for (;;) {
        const handedOver = this.#handOvers?.counted(this.#waiter?.takeHandOver());
        if (handedOver) {
          throwIfStopped(this.#stops); // then the line is left, passing the lock on
          return this.#acquired(handedOver, handedOver.results);
        }
        this.#beginAttempt();
        const identifying = context.identities.check(context, this.settings.ttlMs); // no server counts twice
        if (identifying) {
          await identifying;
          if (this.#attempts === 1) this.#inServerTime();
        }
        this.#subscribed = context.wakeUps.subscribed(this.target.key);
        this.#handOvers?.sending(this.#request.attempt);
        const attempt = await attemptAcquire(context, this.#request);
        this.#handOvers?.answered(attempt);
        this.observe?.(attempt);
        if (attempt.kind !== 'acquired') {
          await this.#refused(attempt);
          continue;
        }
        const mayHold = this.#line?.joined ? mayBeHandedOver(attempt.results) : attempt.results;
        const undoing = undoIfStopped(context, this.#request, mayHold, this.#stops);
        if (undoing) await undoing; // rejects; then the line is left as by a waiter giving up
        return this.#acquired(attempt, mayHold);
      }
    } finally {
      this.#waiter?.dispose();
      const leaving = this.#line?.leave(this.#request);
      if (leaving) await leaving;
      context.shutdown.end();
    }
  }

  /**
   * A new locker's first acquisition built its token before the nodes said what time it is
   * (see `acquisitionToken`): once they did, and before anything was sent, it takes one that
   * gives its start in their time.
   */
  #inServerTime(): void {
    const offsetMs = this.context.identities.clockOffsetMs();
    if (!this.#inLocalTime || offsetMs === undefined) return;
    this.#inLocalTime = false;
    const token = acquisitionToken(this.settings.owner, this.target.kind.size, offsetMs);
    this.#request = { ...this.#request, token };
    if (this.#line) this.#line.token = token;
  }

  /** The next attempt's request, unless the acquisition was stopped meanwhile. */
  #beginAttempt(): void {
    this.#attempts++;
    if (this.#attempts > 1) this.#request = nextAttempt(this.#request);
    throwIfStopped(this.#stops);
    this.#waiter?.attemptBegins();
  }

  /** A quorum granted the hold: the line is left, and the caller gets its {@link Lock}. */
  #acquired(
    attempt: Extract<Attempt, { kind: 'acquired' }>,
    mayHold: readonly (NodeResult | undefined)[],
  ): Lock {
    const { context, target, settings } = this;
    const request = this.#request;
    this.#line?.granted(request, attempt.results);
    this.#waiter?.acquired();
    const lock = grant(context, target.resource, request, attempt, settings, mayHold);
    context.events.report('acquired', () => ({
      resource: target.resource,
      attempts: this.#attempts,
      waitedMs: context.clock.now() - this.#startedAt,
      validityMs: lock.remainingMs(),
      nodes: attempt.results,
      ...labelOf(request.token),
    }));
    return lock;
  }

  /**
   * The attempt did not get the hold: throws when the wait is over (or waiting cannot help),
   * else pauses until the next attempt. A pause ends early when a release hands us the lock.
   */
  async #refused(attempt: Refusal): Promise<void> {
    const { context, target, settings } = this;
    this.#request = noteUnanswered(this.#request, attempt.results);
    const left = this.#deadline - context.clock.now();
    // A wrong password or a certificate that does not verify will not heal by waiting, nor
    // will an address where nothing ever listened (unless the locker was told to wait). A
    // refusal may be its client's last error from before Redis came up (a restart): only
    // one that lasted a connect wait counts.
    const refusedLongEnough = context.clock.now() - this.#startedAt >= CONNECT_WAIT_MS;
    const absent = refusedLongEnough && absentSinceStart(attempt, target, context);
    if (left <= 0 || misconfigured(attempt, target) || absent) {
      const { ttlMs, waitMs } = settings;
      const info = { ttlMs, waitMs, attempts: this.#attempts, context, startedAt: this.#startedAt };
      throw failure(target, attempt, info);
    }
    const { kind: reason, results: nodes } = attempt;
    const retry = (delayMs: number) => ({
      resource: target.resource,
      attempt: this.#attempts,
      delayMs,
      reason,
      nodes,
    });
    const line = this.#line;
    if (reason === 'busy' && line && !this.#waiter) {
      // From now on the release that hands us the lock wakes us at once (see WakeUps).
      this.#waiter = new Waiter(context.wakeUps, line.ticket, target.key);
      const subscribing = this.#waiter.listen();
      if (!this.#subscribed) {
        // The locker's first wait: a hand-off may have come before the subscription did,
        // so try again right away rather than pause.
        const nodeTimeoutMs = nodeTimeoutFor(context, settings.ttlMs);
        await sleep(Math.min(left, nodeTimeoutMs), this.#stops, subscribing);
        this.#waiter.mayHaveMissedWakeUps();
        context.events.report('retry', () => retry(0));
        return;
      }
    }
    const meanMs = pollingMs(context, this.#waiter ? line : undefined);
    // Woken, yet the lock was taken back: ask again once its barging window is surely over.
    const delayMs =
      reason === 'busy' && target.kind.barges && this.#waiter?.woken
        ? Math.min(BARGE_WINDOW_MS + 1, left)
        : retryDelay(meanMs, attempt, left);
    context.events.report('retry', () => retry(delayMs));
    await pause(delayMs, this.#stops, this.#waiter);
  }
}

/**
 * The first operation of a locker waits for the connections still being opened: that takes
 * a moment (more on a loaded machine) and is not waiting for the lock, so even a single
 * attempt allows it half a second; never more than the wait beyond that, never more than
 * 2 s (which also keeps an infinite wait out of setTimeout), and a stop still ends it.
 * `undefined` once they are open.
 */
export function connectionsOpened(
  context: Pick<LockContext, 'connected'>,
  waitMs: number,
  stops: WaitStops,
): Promise<void> | undefined {
  const connecting = context.connected();
  if (!connecting) return undefined;
  const bound = Math.max(waitMs, CONNECT_GRACE_MS);
  return sleep(Math.min(bound, CONNECT_WAIT_MS), stops, connecting);
}

function throwIfStopped(stops: WaitStops): void {
  const stop = stopped(stops);
  if (stop) throw stop;
}

/**
 * Aborted or closed while a successful attempt ran: gives the lock back, then rejects with
 * why. `undefined` when nothing stopped it.
 */
function undoIfStopped(
  context: LockContext,
  request: AcquireRequest,
  acquireResults: readonly (NodeResult | undefined)[],
  stops: WaitStops,
): Promise<never> | undefined {
  const late = stopped(stops);
  if (!late) return undefined;
  const undo = deleteIfOwned(context, { ...request, acquireResults }, true);
  return undo.settled.then(() => {
    throw late;
  });
}

const NONE: readonly number[] = [];

/** How many unanswered attempts an acquisition remembers (see `HoldId.unanswered`). */
const UNANSWERED_KEPT = 16;

/** The request of the attempt after `request`'s: the same acquisition, the next number. */
function nextAttempt(request: AcquireRequest): AcquireRequest {
  return { ...request, attempt: request.attempt + 1 };
}

/**
 * `request`, noting its attempt among the unanswered when a node may have applied its take
 * unseen: no answer in time, or a failure after it was sent (a connection lost meanwhile).
 * Only the most recent {@link UNANSWERED_KEPT} are kept: an older one's hold in a set can
 * only keep a permit from others until its TTL, never add a holder.
 */
function noteUnanswered(request: AcquireRequest, results: readonly NodeResult[]): AcquireRequest {
  const unseen = results.some(
    (r) => r.outcome === 'timeout' || (r.outcome === 'error' && !(r.error instanceof NotSentError)),
  );
  if (!unseen) return request;
  const unanswered = [...request.unanswered, request.attempt].slice(-UNANSWERED_KEPT);
  return { ...request, unanswered };
}

/** The {@link Lock} for a successful attempt. */
function grant(
  context: LockContext,
  resource: string,
  { kind, key, token, attempt: number, unanswered, ttlMs }: AcquireRequest,
  attempt: Extract<Attempt, { kind: 'acquired' }>,
  lifecycle: LockLifecycle & { readonly minHoldMs: number },
  acquireResults: readonly (NodeResult | undefined)[],
): Lock {
  const lease: Lease = {
    kind,
    resource,
    key,
    token,
    attempt: number,
    unanswered,
    ttlMs,
    acquiredAt: attempt.startedAt,
    deadline: attempt.deadline,
    keepUntil: attempt.startedAt + lifecycle.minHoldMs,
    acquireResults,
    fence: attempt.fence,
    status: 'held',
  };
  return new Lock(context, lease, lifecycle.autoExtend ? lifecycle : undefined);
}

/**
 * The round's results of an acquisition in line, with only its yes known: any other node may
 * hand us the lock later, so that release, extension and undo must reach it. That includes a
 * node that refused, and one that this round did not reach (it had stopped answering) but an
 * earlier round put us in line on.
 */
function mayBeHandedOver(
  results: readonly (NodeResult | undefined)[],
): readonly (NodeResult | undefined)[] {
  return results.map((result) => (result?.outcome === 'yes' ? result : undefined));
}
