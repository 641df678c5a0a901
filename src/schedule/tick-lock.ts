import { setTimeout as delay } from 'node:timers/promises';
import { monotonicClock } from '../clock.js';
import { DEFAULTS } from '../config/options.js';
import type { Lock } from '../engine/lock.js';
import { InvalidArgumentError, type LockError, LockLostError } from '../errors.js';
import type { Locker } from '../locker.js';

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
 * On N nodes, instances that try at the same moment can split the votes so that none gets a
 * majority: each undoes what it got, and the tick would run nowhere. So a busy answer is asked
 * again, twice at most, after a random pause of up to the default `retryDelayMs`, while less
 * than half of `lockAtLeastFor` has passed: a real holder keeps the tick at least that long,
 * so a retry cannot find it free as long as clock skew, timer lateness and `nodeTimeoutMs`
 * together stay below the other half.
 */
export async function lockTick(
  locker: Locker,
  resource: string,
  { lockAtMostFor, lockAtLeastFor }: TickLockTimes,
): Promise<Lock | null> {
  // minHoldMs keeps the tick locked until exactly lockAtLeastFor after it began, however
  // little of it is left when the job ends (or the locker closes): an instance whose clock
  // runs behind must not run the tick again.
  const options = { ttlMs: lockAtMostFor, minHoldMs: lockAtLeastFor };
  const startedAt = monotonicClock.now();
  const attempts = locker.nodes.length > 1 ? SPLIT_VOTE_ATTEMPTS : 1;
  let lock = await locker.tryAcquire(resource, options);
  for (let attempt = 2; lock === null && attempt <= attempts; attempt++) {
    await delay(Math.random() * DEFAULTS.retryDelayMs);
    if (monotonicClock.now() - startedAt >= lockAtLeastFor / 2) break;
    lock = await locker.tryAcquire(resource, options);
  }
  return lock;
}

/** Attempts of one instance at a tick on N nodes, where votes can split (see lockTick). */
const SPLIT_VOTE_ATTEMPTS = 3;

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
