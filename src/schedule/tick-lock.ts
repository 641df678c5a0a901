import type { Lock } from '../engine/lock.js';
import { InvalidArgumentError, LockLostError } from '../errors.js';
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
 * Tries the tick's lock once, without waiting: the `Lock`, or `null` when another instance
 * has the tick. Rejects as `tryAcquire` does when the nodes fail.
 */
export function lockTick(
  locker: Locker,
  resource: string,
  { lockAtMostFor, lockAtLeastFor }: TickLockTimes,
): Promise<Lock | null> {
  // minHoldMs keeps the tick locked until exactly lockAtLeastFor after it began, however
  // little of it is left when the job ends (or the locker closes): an instance whose clock
  // runs behind must not run the tick again.
  return locker.tryAcquire(resource, { ttlMs: lockAtMostFor, minHoldMs: lockAtLeastFor });
}

/**
 * Ends a tick that ran: releases its lock (the key stays until `lockAtLeastFor`). Resolves
 * the `LockLostError` when the lock was lost while the job ran (past `lockAtMostFor`, the
 * nodes lost the key, or the locker was closed), `undefined` otherwise; never rejects.
 */
export async function endTick(lock: Lock): Promise<LockLostError | undefined> {
  const { signal } = lock;
  // Reports, never rejects; a release after the deadline aborts the signal first.
  const released = await lock.release();
  if (signal.aborted) return signal.reason as LockLostError;
  if (released === 'not-held') {
    const gone = 'when its release arrived, the nodes no longer held it (evicted or deleted)';
    return new LockLostError(lock.resource, gone);
  }
  return undefined;
}
