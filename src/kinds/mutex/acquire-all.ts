import type { AcquireSettings } from '../../config/acquire-settings.js';
import { acquireLock } from '../../engine/acquire.js';
import type { LockContext } from '../../engine/context.js';
import type { Lock } from '../../engine/lock.js';
import { sleep } from '../../engine/sleep.js';
import { AcquireTimeoutError, LockBusyError, LockLostError, NoQuorumError } from '../../errors.js';
import { MultiLock } from './multi-lock.js';
import { lockTarget } from './mutex-kind.js';

/**
 * A resource that could not be taken (without waiting, or in a round's bounded wait), or that
 * a round lost while it waited for a later one, and why.
 */
type Blocked = LockBusyError | NoQuorumError | AcquireTimeoutError | LockLostError;

/**
 * Acquires every one of `resources` (sorted, distinct), or none. The first round takes them
 * one by one in sorted order, without waiting: when one is busy (or its nodes failed), it
 * gives back what it took, then waits in that resource's line holding nothing, and the next
 * round starts from the lock it was handed. From the second round on, a random pause comes
 * first, so that two callers that keep handing each other what the other needs fall out of
 * step; and a round may wait for a busy resource that sorts after everything it holds, for
 * at most what keeps half the TTL of the least valid lock it holds (see `orderedWaitMs`);
 * the locks it kept while it waited are renewed to their TTL once the group is complete.
 * Without that, callers that wait in each other's lines livelock under strict hand-over
 * (`fair`, or a line past its barging window): each release hands the lock to the next
 * waiter at once, so that the resources are never free together, and the one that holds
 * the first resource always finds the next held by one that will give it back. Waiting only
 * for a resource that sorts after all it holds, no caller waits for one that waits for it.
 * Each resource is a lock of its own, under its own hash tag, so this works across Redis
 * Cluster slots. Gives up when `waitMs` has passed overall, with the last resource's error.
 * `minHoldMs` holds for the group once complete: what a round gives back is freed at once.
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
  let rounds = 1;
  /** What this round kept while it waited for a later resource. */
  const kept = new Set<Lock>();
  /**
   * How long a round may wait for `resource` while it holds locks: 0 in the first round (it
   * waits holding nothing) and when it holds a resource that sorts after `resource` (that
   * order could deadlock); else at most until the least valid of its locks has half the TTL
   * left, and never past the overall wait.
   */
  const orderedWaitMs = (resource: string): number => {
    if (rounds === 1 || held.size === 0) return 0;
    let leastMs = Number.POSITIVE_INFINITY;
    for (const [name, lock] of held) {
      if (name > resource) return 0;
      leastMs = Math.min(leastMs, lock.remainingMs());
    }
    const left = startedAt + settings.waitMs - clock.now();
    const waitMs = Math.max(0, Math.min(left, leastMs - settings.ttlMs / 2));
    if (waitMs > 0) for (const lock of held.values()) kept.add(lock);
    return waitMs;
  };
  try {
    for (; ; rounds++) {
      const blocked =
        (await takeInOrder(resources, held, take, orderedWaitMs)) ?? (await renewAll(kept));
      if (!blocked) {
        const locks = resources.map((resource) => held.get(resource) as Lock);
        const keepUntil = clock.now() + settings.minHoldMs;
        for (const lock of locks) lock.keepKeyUntil(keepUntil);
        return new MultiLock(locks);
      }
      await releaseAll(held);
      kept.clear();
      if (rounds > 1) {
        const pauseMs = context.settings.retryDelayMs * Math.random();
        await sleep(Math.min(pauseMs, startedAt + settings.waitMs - clock.now()), stops);
      }
      const left = startedAt + settings.waitMs - clock.now();
      if (left <= 0) throw outOfTime(blocked, settings.waitMs, clock.now() - startedAt, rounds);
      const handed = await take(blocked.resource, left).catch((error: unknown) => {
        // The call's own wait and rounds, not those of its last take alone.
        if (!(error instanceof AcquireTimeoutError)) throw error;
        throw outOfTime(error, settings.waitMs, clock.now() - startedAt, rounds);
      });
      held.set(blocked.resource, handed);
    }
  } catch (error) {
    await releaseAll(held);
    throw error;
  }
}

/**
 * Takes the resources not held yet, in order, each waiting `waitMs(resource)`, until one
 * cannot be taken: its error.
 */
async function takeInOrder(
  resources: readonly string[],
  held: Map<string, Lock>,
  take: (resource: string, waitMs: number) => Promise<Lock>,
  waitMs: (resource: string) => number,
): Promise<Blocked | undefined> {
  for (const resource of resources) {
    if (held.has(resource)) continue;
    try {
      held.set(resource, await take(resource, waitMs(resource)));
    } catch (error) {
      if (
        error instanceof LockBusyError ||
        error instanceof NoQuorumError ||
        error instanceof AcquireTimeoutError
      )
        return error;
      throw error;
    }
  }
  return undefined;
}

/** The error when the wait is over: busy for a while is a timeout; the rest as they were. */
function outOfTime(blocked: Blocked, waitMs: number, waitedMs: number, rounds: number) {
  if (waitMs === 0 || blocked instanceof NoQuorumError) return blocked;
  return new AcquireTimeoutError(blocked.resource, waitedMs, rounds, blocked.nodes);
}

/**
 * Renews `locks` (kept while the round waited) to their TTL, so that a complete group is valid
 * for about its TTL, as one lock is when acquired. A lock lost meanwhile (an extension that
 * failed, a failover) fails the round: its `LockLostError`. Other errors (a node refusing
 * `PEXPIRE` to an ACL user) end the call.
 */
async function renewAll(locks: ReadonlySet<Lock>): Promise<LockLostError | undefined> {
  const renewed = await Promise.all(
    [...locks].map((lock) =>
      lock.extend().then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof LockLostError) return error;
          throw error;
        },
      ),
    ),
  );
  return renewed.find((error) => error !== undefined);
}

async function releaseAll(held: Map<string, Lock>): Promise<void> {
  await Promise.all([...held.values()].map((lock) => lock.release()));
  held.clear();
}
