import { setTimeout as delay } from 'node:timers/promises';
import { monotonicClock } from '../clock.js';
import { DEFAULTS } from '../config/options.js';
import { misconfiguredQuorum } from '../engine/configuration-failure.js';
import type { Lock } from '../engine/lock.js';
import { InvalidArgumentError, type LockError, LockLostError, NoQuorumError } from '../errors.js';
import type { Locker } from '../locker.js';
import { quorumOf } from '../quorum/tally.js';

/**
 * How long one tick's lock lives, as in ShedLock: at most `lockAtMostFor` (the TTL, never
 * extended), at least `lockAtLeastFor` after it was taken (`minHoldMs`).
 */
export interface TickLockTimes {
  readonly lockAtMostFor: number;
  readonly lockAtLeastFor: number;
}

/**
 * Throws unless `lockAtLeastFor` is an integer in [0, lockAtMostFor].
 * @param upper what the user calls `lockAtMostFor`, for the message
 */
export function validateLockAtLeastFor(
  lockAtLeastFor: unknown,
  lockAtMostFor: number,
  upper = 'lockAtMostFor',
): void {
  if (
    !Number.isSafeInteger(lockAtLeastFor) ||
    (lockAtLeastFor as number) < 0 ||
    (lockAtLeastFor as number) > lockAtMostFor
  ) {
    throw new InvalidArgumentError('lockAtLeastFor', `an integer in [0, ${upper}]`, lockAtLeastFor);
  }
}

/**
 * Tries the tick's lock without waiting: the `Lock`, or `null` when another instance has the
 * tick. Rejects as `tryAcquire` does when the nodes fail.
 *
 * A tick is asked again, after a random pause of up to the default `retryDelayMs` (or up to
 * what is left of the window, when less), only while less than half of `lockAtLeastFor` has
 * passed since it was first asked: a real holder keeps the tick at least that long, so a
 * retry cannot find it free as long as clock skew, timer lateness and `nodeTimeoutMs`
 * together stay below the other half. What is asked again:
 * - on N nodes, a busy answer, twice at most: instances that try at the same moment can split
 *   the votes so that none gets a majority (each undoes what it got), and the tick would run
 *   nowhere; a busy answer is usually a real holder, though, so no more than that;
 * - on any number of nodes, a `NoQuorumError` that retrying may mend, for as long as the
 *   window lasts: a node out (or one that abstains after a restart) turns a split into an
 *   error vote, or a majority could not be reached. Not a configuration error (credentials,
 *   permissions), which no retry mends.
 * So a tick is lost to failures only when no majority could be reached for half of
 * `lockAtLeastFor`.
 */
export async function lockTick(
  locker: Locker,
  resource: string,
  times: TickLockTimes,
): Promise<Lock | null> {
  const startedAt = monotonicClock.now();
  const quorum = quorumOf(locker.nodes.length);
  let busyRetries = locker.nodes.length > 1 ? BUSY_RETRIES : 0;
  let previous: unknown;
  for (;;) {
    const options = tickLockOptions(times, startedAt);
    let outcome: unknown;
    try {
      outcome = await locker.tryAcquire(resource, options); // its options' check throws at once
    } catch (error) {
      outcome = error;
    }
    // What is left of lockAtMostFor may be too short a TTL for the locker (not above its
    // nodeTimeoutMs): the tick's window is over then, with the last attempt's outcome.
    if (previous !== undefined && outcome instanceof InvalidArgumentError) {
      if (previous === null) return null;
      throw previous;
    }
    previous = outcome;
    if (outcome !== null && !(outcome instanceof Error)) return outcome as Lock;
    const mayMend =
      outcome === null
        ? busyRetries-- > 0
        : outcome instanceof NoQuorumError && !misconfiguredQuorum(outcome.nodes, quorum);
    const leftMs = startedAt + times.lockAtLeastFor / 2 - monotonicClock.now();
    if (!mayMend || leftMs < MIN_PAUSE_MS) {
      if (outcome === null) return null;
      throw outcome;
    }
    // Within what is left of the window (a pause drawn past it would give the tick up), and
    // never less than a timer's least delay: an answer that comes at once (a node that is
    // out) is not asked again in a loop.
    const longestMs = Math.min(DEFAULTS.retryDelayMs, leftMs);
    await delay(MIN_PAUSE_MS + Math.random() * (longestMs - MIN_PAUSE_MS));
  }
}

/**
 * The lock options of an attempt at a tick first asked at `startedAt` (monotonic ms). Both
 * times count from then, not from the attempt: minHoldMs keeps the tick locked until exactly
 * `lockAtLeastFor` after it began, however little of it is left when the job ends (or the
 * locker closes), so that an instance whose clock runs behind does not run it again; and a
 * tick taken on a retry holds its key no longer than `lockAtMostFor` after it began, as if
 * the first attempt had got it, so that it never makes the next tick skip where the first
 * attempt would not have. Retries stop before half of `lockAtLeastFor`, so the TTL stays
 * above half of `lockAtMostFor`.
 */
function tickLockOptions(
  { lockAtMostFor, lockAtLeastFor }: TickLockTimes,
  startedAt: number,
): { ttlMs: number; minHoldMs: number } {
  const elapsedMs = Math.round(monotonicClock.now() - startedAt);
  const ttlMs = Math.max(1, lockAtMostFor - elapsedMs);
  return { ttlMs, minHoldMs: Math.min(ttlMs, Math.max(0, lockAtLeastFor - elapsedMs)) };
}

/** The least pause before a tick is asked again (ms): a Node timer's least delay. */
const MIN_PAUSE_MS = 1;

/** How often a busy tick is asked again on N nodes, where votes can split (see lockTick). */
const BUSY_RETRIES = 2;

/**
 * Ends a tick that ran: releases its lock (the key stays until `lockAtLeastFor`). Resolves
 * the `LockLostError` when the lock was lost while the job ran (past `lockAtMostFor`, the
 * nodes lost the key, or the locker was closed), the `NoQuorumError` of a release the nodes
 * refused (a configuration error, such as an ACL user without `+del` or `+pexpire`), `undefined`
 * otherwise; never rejects.
 */
export async function endTick(lock: Lock): Promise<LockError | undefined> {
  const { signal } = lock;
  // A release after the deadline aborts the signal first.
  const released = await lock.release().catch((error: LockError) => error);
  if (signal.aborted) return signal.reason as LockLostError;
  if (typeof released !== 'string') return released;
  if (released === 'not-held') {
    const gone = 'when its release arrived, the nodes no longer held it (evicted or deleted)';
    return new LockLostError(lock.resource, gone);
  }
  return undefined;
}
