import type { AcquireSettings } from '../config/acquire-settings.js';
import { CONNECT_WAIT_MS, isConfigurationError, NotSentError } from '../driver/connection.js';
import {
  AcquireTimeoutError,
  LockBusyError,
  LockError,
  LockerClosedError,
  NoQuorumError,
} from '../errors.js';
import type { NodeResult } from '../node-result.js';
import { driftMs } from '../quorum/validity.js';
import { type Attempt, attemptAcquire } from './attempt.js';
import type { LockContext } from './context.js';
import type { AcquireRequest, HoldTarget, Lease } from './contract.js';
import { nodeTimeoutFor } from './every-node.js';
import { Lock, type LockLifecycle } from './lock.js';
import { deleteIfOwned } from './release.js';
import { sleep, stopped, type WaitStops } from './sleep.js';
import { traced } from './telemetry.js';
import { newToken } from './token.js';
import { PlaceInLine } from './waiting-line.js';
import { Waiter } from './wake-ups.js';

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
  if (!telemetry) return acquireUntraced(context, target, settings);
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
    () => acquireUntraced(context, target, settings, observe),
    {
      ok: () => ({ outcome: 'acquired', attempts, nodes }),
      failed: (error) => ({ outcome: outcomeOf(error), attempts, nodes, error: error as Error }),
    },
  );
}

/** The outcome of a failed acquisition, by its error's code: `busy`, `timeout`, `no_quorum`... */
function outcomeOf(error: unknown): string {
  const code = error instanceof LockError ? error.code : 'ERROR';
  return OUTCOMES[code] ?? code.toLowerCase();
}

const OUTCOMES: Record<string, string> = {
  LOCK_BUSY: 'busy',
  ACQUIRE_TIMEOUT: 'timeout',
  NO_QUORUM: 'no_quorum',
  ABORTED: 'aborted',
  LOCKER_CLOSED: 'closed',
};

async function acquireUntraced(
  context: LockContext,
  target: HoldTarget,
  settings: AcquireSettings,
  observe?: (attempt: Attempt) => void,
): Promise<Lock> {
  const { clock } = context;
  const { kind, resource, key } = target;
  const { ttlMs, waitMs, signal } = settings;
  const stops: WaitStops = {
    what: `Acquiring "${resource}"`,
    signal,
    closed: context.shutdown.signal,
  };
  if (context.shutdown.closed) throw new LockerClosedError(stops.what);
  const token = newToken();
  // An acquisition that may wait takes a place in line: a release hands the lock over to the
  // first waiter. One that may not (tryAcquire) never joins, so never needs to leave.
  const line =
    settings.fair || waitMs > 0
      ? new PlaceInLine(context, { kind, key, token, ttlMs }, settings.fair)
      : undefined;
  let request: AcquireRequest = {
    kind,
    key,
    token,
    attempt: 1,
    unanswered: NONE,
    ttlMs,
    fencing: settings.fencing,
    ...(line ? { line } : {}),
  };
  let waiter: Waiter | undefined; // from the first busy attempt on
  const startedAt = clock.now();
  const deadline = startedAt + waitMs;
  context.shutdown.begin();
  try {
    // Each step returns a promise only when it has something to wait for: the uncontended
    // path does not even await a resolved promise.
    const connecting = connectionsOpened(context, waitMs, stops);
    if (connecting) await connecting;
    for (let attempts = 1; ; attempts++) {
      if (attempts > 1) request = nextAttempt(request);
      throwIfStopped(stops);
      waiter?.attemptBegins();
      const identifying = context.identities.check(context, ttlMs); // no server counts twice
      if (identifying) await identifying;
      const subscribed = context.wakeUps.subscribed;
      const attempt = await attemptAcquire(context, request);
      observe?.(attempt);
      if (attempt.kind === 'acquired') {
        const mayHold = line?.joined ? mayBeHandedOver(attempt.results) : attempt.results;
        const undoing = undoIfStopped(context, request, mayHold, stops);
        if (undoing) await undoing; // rejects; then the line is left as by a waiter giving up
        line?.granted(request, attempt.results);
        const lock = grant(context, resource, request, attempt, settings, mayHold);
        context.events.report('acquired', () => ({
          resource,
          attempts,
          waitedMs: clock.now() - startedAt,
          validityMs: lock.remainingMs(),
          nodes: attempt.results,
        }));
        return lock;
      }
      request = noteUnanswered(request, attempt.results);
      const left = deadline - clock.now();
      // A wrong password or a certificate that does not verify will not heal by waiting.
      if (left <= 0 || misconfigured(attempt, target)) {
        throw failure(target, attempt, { ttlMs, waitMs, attempts, context, startedAt });
      }
      const { kind: reason, results: nodes } = attempt;
      if (reason === 'busy') context.busyKeys.mark(key);
      const retry = (delayMs: number) => ({ resource, attempt: attempts, delayMs, reason, nodes });
      if (reason === 'busy' && line && !waiter) {
        // From now on the release that hands us the lock wakes us at once (see WakeUps).
        waiter = new Waiter(context.wakeUps, line.ticket);
        const subscribing = waiter.listen();
        if (!subscribed) {
          // The locker's first wait: a hand-off may have come before the subscription did,
          // so try again right away rather than pause.
          await sleep(Math.min(left, nodeTimeoutFor(context, ttlMs)), stops, subscribing);
          context.events.report('retry', () => retry(0));
          continue;
        }
      }
      const delayMs = retryDelay(pollingMs(context, waiter ? line : undefined), attempt, left);
      context.events.report('retry', () => retry(delayMs));
      await pause(delayMs, stops, waiter);
    }
  } finally {
    waiter?.dispose();
    await line?.leave(request);
    context.shutdown.end();
  }
}

/**
 * The first operation of a locker waits for the connections still being opened: that takes
 * a moment (more on a loaded machine) and is not waiting for the lock, so even a single
 * attempt allows it half a second; never more than the wait beyond that, never more than
 * 2 s (which also keeps an infinite wait out of setTimeout), and a stop still ends it.
 * `undefined` once they are open.
 */
function connectionsOpened(
  context: LockContext,
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
  const undo = deleteIfOwned(context, { ...request, acquireResults, announce: true });
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

/** Pauses `delayMs`, or until a release is announced, or until a stop. */
async function pause(delayMs: number, stops: WaitStops, waiter: Waiter | undefined): Promise<void> {
  const release = waiter?.nextRelease();
  try {
    await sleep(delayMs, stops, release?.wake);
  } finally {
    release?.cancel();
  }
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

/** What a first acquisition allows for opening connections, however short its wait. */
const CONNECT_GRACE_MS = 500;

/**
 * Whether so many nodes failed with a configuration error (WRONGPASS, NOAUTH, NOPERM, a TLS
 * certificate) that the others cannot make a majority: retrying for the rest of the wait
 * cannot help.
 */
function misconfigured(
  attempt: Exclude<Attempt, { kind: 'acquired' }>,
  { kind }: HoldTarget,
): boolean {
  if (attempt.kind !== 'unavailable') return false;
  const { results } = attempt;
  const broken = results.filter((r) => r.outcome === 'error' && isConfigurationError(r.error));
  return broken.length > 0 && results.length - broken.length < kind.quorum(results.length);
}

/**
 * How often to try again. A waiter in line that the locker's channel reaches is handed the
 * lock by the release and woken: it asks only to keep its place (and in case a message was
 * lost while a subscriber reconnected), 4 times per waiter timeout. Others poll every
 * `retryDelayMs`.
 */
function pollingMs(context: LockContext, line: PlaceInLine | undefined): number {
  const { retryDelayMs } = context.settings;
  if (!line?.joined || !context.wakeUps.listening) return retryDelayMs;
  return Math.max(retryDelayMs, line.waiterTimeoutMs / 4);
}

/** A random pause around `meanMs`, cut short by the holder's expiry and by the deadline. */
function retryDelay(meanMs: number, attempt: Attempt, leftMs: number): number {
  const jittered = meanMs * (0.5 + Math.random());
  const holderMs =
    attempt.kind === 'busy' && attempt.holderRemainingMs !== undefined
      ? attempt.holderRemainingMs + 1
      : Number.POSITIVE_INFINITY;
  return Math.max(0, Math.min(jittered, holderMs, leftMs));
}

function failure(
  target: HoldTarget,
  attempt: Exclude<Attempt, { kind: 'acquired' }>,
  info: {
    ttlMs: number;
    waitMs: number;
    attempts: number;
    context: LockContext;
    startedAt: number;
  },
): LockError {
  const { kind, resource } = target;
  const { results } = attempt;
  switch (attempt.kind) {
    case 'busy':
      return info.waitMs === 0
        ? new LockBusyError(resource, results, attempt.holderRemainingMs)
        : new AcquireTimeoutError(
            resource,
            info.context.clock.now() - info.startedAt,
            info.attempts,
            results,
          );
    case 'unavailable': {
      const needed = kind.quorum(results.length);
      const hint = misconfigured(attempt, target)
        ? ' A configuration error (credentials, permissions, TLS, a Cluster node given as one server): retrying cannot fix it.'
        : '';
      return new NoQuorumError(
        resource,
        `No quorum for "${resource}": ${yes(results)} of ${results.length} node(s) agreed, ${needed} needed.${hint}`,
        results,
      );
    }
    case 'expired': {
      const drift = driftMs(info.ttlMs, info.context.settings.driftFactor);
      return new NoQuorumError(
        resource,
        `${yes(results)} of ${results.length} node(s) agreed on "${resource}" too late: ${Math.round(attempt.elapsedMs)} ms elapsed + ${drift} ms drift used up the ${info.ttlMs} ms lease.`,
        results,
      );
    }
  }
}

function yes(results: readonly NodeResult[]): number {
  return results.filter((r) => r.outcome === 'yes').length;
}
