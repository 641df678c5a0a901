import type { AcquireSettings } from '../../config/acquire-settings.js';
import { acquireLock } from '../../engine/acquire.js';
import type { LockContext } from '../../engine/context.js';
import type { Lock } from '../../engine/lock.js';
import { sleep } from '../../engine/sleep.js';
import { AcquireTimeoutError, LockBusyError, NoQuorumError } from '../../errors.js';
import { MultiLock } from './multi-lock.js';
import { lockTarget } from './mutex-kind.js';

/** A resource that could not be taken without waiting, and why. */
type Blocked = LockBusyError | NoQuorumError;

/**
 * Acquires every one of `resources` (sorted, distinct), or none. Each round takes them one
 * by one in sorted order, without waiting: when one is busy (or its nodes failed), it gives
 * back what it took, then waits in that resource's line holding nothing (so no two callers
 * can wait for each other), and the next round starts from the lock it was handed. From the
 * second round on, a random pause comes first, so that two callers that keep handing each
 * other what the other needs fall out of step. Each resource is a lock of its own, under
 * its own hash tag, so this works across Redis Cluster slots. Gives up when `waitMs` has
 * passed overall, with the last resource's error. `minHoldMs` holds for the group once
 * complete: what a round gives back is freed at once.
 */
export async function acquireAll(
  context: LockContext,
  resources: readonly string[],
  settings: AcquireSettings,
): Promise<MultiLock> {
  const { clock } = context;
  const startedAt = clock.now();
  const stops = {
    what: `Acquiring ${resources.map((r) => `"${r}"`).join(', ')}`,
    signal: settings.signal,
    closed: context.shutdown.signal,
  };
  const held = new Map<string, Lock>();
  // Taken without minHoldMs: giving back what a round took is no hold, and must free it at
  // once. The group as a whole keeps it, from the moment it is complete.
  const take = (resource: string, waitMs: number) =>
    acquireLock(context, lockTarget(context, resource), { ...settings, waitMs, minHoldMs: 0 });
  try {
    for (let rounds = 1; ; rounds++) {
      const blocked = await takeInOrder(resources, held, take);
      if (!blocked) {
        const locks = resources.map((resource) => held.get(resource) as Lock);
        const keepUntil = clock.now() + settings.minHoldMs;
        for (const lock of locks) lock.keepKeyUntil(keepUntil);
        return new MultiLock(locks);
      }
      await releaseAll(held);
      if (rounds > 1) {
        const pauseMs = context.settings.retryDelayMs * Math.random();
        await sleep(Math.min(pauseMs, startedAt + settings.waitMs - clock.now()), stops);
      }
      const left = startedAt + settings.waitMs - clock.now();
      if (left <= 0) throw outOfTime(blocked, settings.waitMs, clock.now() - startedAt, rounds);
      held.set(blocked.resource, await take(blocked.resource, left));
    }
  } catch (error) {
    await releaseAll(held);
    throw error;
  }
}

/** Takes the resources not held yet, in order, until one cannot be taken: its error. */
async function takeInOrder(
  resources: readonly string[],
  held: Map<string, Lock>,
  take: (resource: string, waitMs: number) => Promise<Lock>,
): Promise<Blocked | undefined> {
  for (const resource of resources) {
    if (held.has(resource)) continue;
    try {
      held.set(resource, await take(resource, 0));
    } catch (error) {
      if (error instanceof LockBusyError || error instanceof NoQuorumError) return error;
      throw error;
    }
  }
  return undefined;
}

/** The error when the wait is over: busy for a while is a timeout; the rest as they were. */
function outOfTime(blocked: Blocked, waitMs: number, waitedMs: number, rounds: number) {
  if (waitMs === 0 || !(blocked instanceof LockBusyError)) return blocked;
  return new AcquireTimeoutError(blocked.resource, waitedMs, rounds, blocked.nodes);
}

async function releaseAll(held: Map<string, Lock>): Promise<void> {
  await Promise.all([...held.values()].map((lock) => lock.release()));
  held.clear();
}
