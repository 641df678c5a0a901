import {
  AcquireTimeoutError,
  LockBusyError,
  type LockError,
  LockerClosedError,
  NoQuorumError,
} from '../errors.js';
import { lockKey, releaseChannel, turnChannel } from '../keys.js';
import type { AcquireSettings } from '../options.js';
import { quorumOf } from '../quorum/tally.js';
import { driftMs } from '../quorum/validity.js';
import { type AcquireRequest, type Attempt, attemptAcquire } from './attempt.js';
import { CONNECT_WAIT_MS, deleteIfOwned, type LockContext, nodeTimeoutFor } from './context.js';
import type { Watch } from './hand-off.js';
import type { Lease } from './lease.js';
import { Lock, type LockLifecycle } from './lock.js';
import { leaveQueue, newTicket, waiterTimeoutMs } from './queue.js';
import { sleep, stopped, type WaitStops } from './sleep.js';
import { newToken } from './token.js';

/**
 * Acquires `resource`, retrying after a random delay while it is busy or nodes fail, until
 * `waitMs` has passed. A pause never runs past the deadline, past the current holder's
 * remaining lease, or past an abort of `signal`.
 */
export async function acquireLock(
  context: LockContext,
  resource: string,
  { ttlMs, waitMs, signal, autoExtend, maxHoldMs, minHoldMs, fair, fencing }: AcquireSettings,
): Promise<Lock> {
  const { clock, settings } = context;
  const key = lockKey(settings.prefix, resource);
  const token = newToken();
  const request: AcquireRequest = {
    key,
    token,
    ttlMs,
    fencing,
    ...(fair ? { fair: { ticket: newTicket(), waiterTimeoutMs: waiterTimeoutMs(context) } } : {}),
  };
  let queued = fair; // in line on some nodes until it got the lock there or left
  const startedAt = clock.now();
  const deadline = startedAt + waitMs; // of the wait
  const stops: WaitStops = {
    what: `Acquiring "${resource}"`,
    signal,
    closed: context.shutdown.signal,
  };
  if (context.shutdown.closed) throw new LockerClosedError(stops.what);
  context.shutdown.begin();
  let watch: Watch | undefined;
  try {
    const connecting = context.connected();
    if (connecting) {
      // Opening connections takes a moment (more on a loaded machine); it is not waiting for
      // the lock, so even a single attempt allows it half a second. Never more than the wait
      // beyond that, never more than 2 s, and the signal still cancels it. (The cap also keeps
      // an infinite wait out of setTimeout.)
      const bound = Math.max(waitMs, CONNECT_GRACE_MS);
      await sleep(Math.min(bound, CONNECT_WAIT_MS), stops, connecting);
    }
    for (let attempts = 1; ; attempts++) {
      const stop = stopped(stops);
      if (stop) throw stop;
      const seen = watch?.seen() ?? 0;
      // No server may count twice: rejects if one is listed twice; free once all are known.
      const identifying = context.identities.check(context, nodeTimeoutFor(context, ttlMs));
      if (identifying) await identifying;
      const attempt = await attemptAcquire(context, request);
      if (attempt.kind === 'acquired') {
        if (fair) {
          // Nodes that said yes took us out of their line; the others must too.
          const results = attempt.results;
          void context.shutdown.track(
            () => leaveQueue(context, key, token, ttlMs, results).settled,
          );
          queued = false;
        }
        const late = stopped(stops); // aborted or closed while the attempt ran
        if (late) {
          const acquireResults = attempt.results;
          await deleteIfOwned(context, { key, token, ttlMs, acquireResults, announce: true })
            .settled;
          throw late;
        }
        const lock = grant(context, resource, request, attempt, {
          autoExtend,
          maxHoldMs,
          minHoldMs,
        });
        context.events.report('acquired', () => ({
          resource,
          attempts,
          waitedMs: clock.now() - startedAt,
          validityMs: lock.remainingMs(),
          nodes: attempt.results,
        }));
        return lock;
      }
      const left = deadline - clock.now();
      if (left <= 0) {
        throw failure(resource, attempt, { ttlMs, waitMs, attempts, context, startedAt });
      }
      const { kind: reason, results: nodes } = attempt;
      if (reason === 'busy' && watch === undefined) {
        // From now on a release wakes us at once. Subscribing took a moment in which the
        // holder may have released, so try again right away rather than sleep.
        // A fair waiter listens on its own channel: it is woken only when it is its turn.
        watch = context.handOff.watch(
          request.fair ? turnChannel(key, request.fair.ticket) : releaseChannel(key),
        );
        await sleep(Math.min(left, nodeTimeoutFor(context, ttlMs)), stops, watch.ready);
        context.events.report('retry', () => ({
          resource,
          attempt: attempts,
          delayMs: 0,
          reason,
          nodes,
        }));
        continue;
      }
      const delayMs = retryDelay(settings.retryDelayMs, attempt, left);
      context.events.report('retry', () => ({
        resource,
        attempt: attempts,
        delayMs,
        reason,
        nodes,
      }));
      const next = watch?.next(seen);
      try {
        await sleep(delayMs, stops, next?.wake);
      } finally {
        next?.cancel();
      }
    }
  } finally {
    watch?.dispose();
    if (queued) await leaveQueue(context, key, token, ttlMs).settled;
    context.shutdown.end();
  }
}

/** The {@link Lock} for a successful attempt. */
function grant(
  context: LockContext,
  resource: string,
  { key, token, ttlMs }: AcquireRequest,
  attempt: Extract<Attempt, { kind: 'acquired' }>,
  lifecycle: LockLifecycle & { minHoldMs: number },
): Lock {
  const lease: Lease = {
    resource,
    key,
    token,
    ttlMs,
    acquiredAt: attempt.startedAt,
    deadline: attempt.deadline,
    keepUntil: attempt.startedAt + lifecycle.minHoldMs,
    acquireResults: attempt.results,
    fence: attempt.fence,
    status: 'held',
  };
  return new Lock(context, lease, lifecycle.autoExtend ? lifecycle : undefined);
}

/** What a first acquisition allows for opening connections, however short its wait. */
const CONNECT_GRACE_MS = 500;

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
  resource: string,
  attempt: Exclude<Attempt, { kind: 'acquired' }>,
  info: {
    ttlMs: number;
    waitMs: number;
    attempts: number;
    context: LockContext;
    startedAt: number;
  },
): LockError {
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
      const yes = results.filter((r) => r.outcome === 'yes').length;
      const needed = quorumOf(results.length);
      return new NoQuorumError(
        resource,
        `No quorum for "${resource}": ${yes} of ${results.length} node(s) agreed, ${needed} needed.`,
        results,
      );
    }
    case 'expired': {
      const drift = driftMs(info.ttlMs, info.context.settings.driftFactor);
      return new NoQuorumError(
        resource,
        `A majority agreed on "${resource}" too late: ${Math.round(attempt.elapsedMs)} ms elapsed + ${drift} ms drift used up the ${info.ttlMs} ms lease.`,
        results,
      );
    }
  }
}
