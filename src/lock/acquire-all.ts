import { AcquireTimeoutError, LockBusyError } from '../errors.js';
import type { AcquireSettings } from '../options.js';
import { acquireLock, lockTarget } from './acquire.js';
import type { LockContext } from './context.js';
import type { Lock } from './lock.js';
import { MultiLock } from './multi-lock.js';

/**
 * Acquires every one of `resources` (sorted, distinct), or none. Each round takes them one
 * by one in sorted order, without waiting: when one is busy, it gives back what it took,
 * then waits in that resource's line holding nothing (so no two callers can wait for each
 * other), and the next round starts from the lock it was handed. Each resource is a lock
 * of its own, under its own hash tag, so this works across Redis Cluster slots. Gives up
 * when `waitMs` has passed overall, with the busy resource's error.
 */
export async function acquireAll(
  context: LockContext,
  resources: readonly string[],
  settings: AcquireSettings,
): Promise<MultiLock> {
  const { clock } = context;
  const startedAt = clock.now();
  const held = new Map<string, Lock>();
  const take = (resource: string, waitMs: number) =>
    acquireLock(context, lockTarget(context, resource), { ...settings, waitMs });
  try {
    for (let rounds = 1; ; rounds++) {
      const busy = await takeInOrder(resources, held, take);
      if (!busy) return new MultiLock(resources.map((resource) => held.get(resource) as Lock));
      await releaseAll(held);
      const left = startedAt + settings.waitMs - clock.now();
      if (left <= 0 && settings.waitMs > 0) {
        const { resource, nodes } = busy;
        throw new AcquireTimeoutError(resource, clock.now() - startedAt, rounds, nodes);
      }
      if (left <= 0) throw busy;
      held.set(busy.resource, await take(busy.resource, left));
    }
  } catch (error) {
    await releaseAll(held);
    throw error;
  }
}

/** Takes the resources not held yet, in order, until one is busy: its error, if any. */
async function takeInOrder(
  resources: readonly string[],
  held: Map<string, Lock>,
  take: (resource: string, waitMs: number) => Promise<Lock>,
): Promise<LockBusyError | undefined> {
  for (const resource of resources) {
    if (held.has(resource)) continue;
    try {
      held.set(resource, await take(resource, 0));
    } catch (error) {
      if (error instanceof LockBusyError) return error;
      throw error;
    }
  }
  return undefined;
}

async function releaseAll(held: Map<string, Lock>): Promise<void> {
  await Promise.all([...held.values()].map((lock) => lock.release()));
  held.clear();
}
