import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { DEFAULTS } from '../../src/config/options.js';
import { NoQuorumError, schedule, type TickOutcome } from '../../src/index.js';
import { runCoordinator } from '../../src/schedule/node-cron.js';
import { lockTick } from '../../src/schedule/tick-lock.js';
import { useLockers, useRedis } from '../support/redis.js';

/**
 * A tick (schedule(), node-cron's fires) on 3 nodes, with one node out: another instance's
 * attempt holds a second node for a moment, so the votes split (busy, yes, error) and no
 * instance gets a majority. The tick must be asked again within half of lockAtLeastFor, not
 * lost: a fire may be lost only when no majority is reachable for that long. Real
 * redis-server processes; the split is made, not hoped for.
 */
const fixture = useRedis(3);
const locker = useLockers(fixture);
const LOCK_AT_LEAST_FOR = 3_000;
/** The per-node timeout of the lockers here. */
const NODE_TIMEOUT_MS = 200;
/**
 * How long after the first attempt at a tick a retry gets it (below half of lockAtLeastFor,
 * and well above the per-node timeout, so that a TTL counted from the retry shows).
 */
const RETRIED_AFTER_MS = 1_000;

/** Acquisition requests node `admin` has run so far (a take is a SET or a script). */
async function takesOn(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  let calls = 0;
  for (const command of ['set', 'eval', 'evalsha']) {
    calls += Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
  }
  return calls;
}

/** Resolves once node `admin` has run another acquisition request than the `before` ones. */
async function anotherTake(admin: Redis, before: number): Promise<void> {
  while ((await takesOn(admin)) <= before) await delay(10);
}

/**
 * A locker that met all three nodes, with node 2 then killed, and `key` held on node 0 by
 * another instance's attempt; resolves the request count of node 1 then.
 */
async function splitSetUp(key: string) {
  const { admin, redis } = fixture();
  const l = locker({ nodeTimeoutMs: NODE_TIMEOUT_MS });
  await (await l.acquire('warm-up', { ttlMs: 10_000 })).release();
  await redis.nodes[2]?.kill();
  await admin[0]?.set(key, 'another-instance', 'PX', 60_000);
  return { l, admin, before: await takesOn(admin[1] as Redis) };
}

describe('a tick whose votes split while a node is out', () => {
  it('schedule(): asks again, and the tick runs', async () => {
    const { l, admin, before } = await splitSetUp('distlock:{schedule:split}');
    const outcomes: TickOutcome[] = [];
    const ticked = new Promise<void>((resolve) => {
      const job = schedule(
        l,
        'split',
        '* * * * * *',
        {
          lockAtMostFor: 10_000,
          lockAtLeastFor: LOCK_AT_LEAST_FOR,
          onTick: (outcome) => {
            outcomes.push(outcome);
            job.stop().then(resolve, resolve);
          },
        },
        () => undefined,
      );
    });
    // The first attempt split the votes; the other instance's attempt is then undone.
    await anotherTake(admin[1] as Redis, before);
    await admin[0]?.del('distlock:{schedule:split}');
    await ticked;
    // Before: 'failed' (a NoQuorumError), the tick run nowhere.
    expect(outcomes).toEqual(['ran']);
  });

  it('node-cron: asks again, and the fire runs on this instance', async () => {
    const key = 'report:2026-01-01T03:00:00.000Z';
    const redisKey = `distlock:{node-cron:${key}}`;
    const { l, admin, before } = await splitSetUp(redisKey);
    const coordinator = runCoordinator(l, { lockAtLeastFor: LOCK_AT_LEAST_FOR });
    const shouldRun = coordinator.shouldRun(key, 10_000).catch((error: unknown) => error);
    await anotherTake(admin[1] as Redis, before);
    await admin[0]?.del(redisKey);
    // Before: rejected with a NoQuorumError, and node-cron skipped the fire (fail-closed).
    expect(await shouldRun).toBe(true);
    await coordinator.onComplete(key);
  });

  it('asks again within a window shorter than the retry pause', async () => {
    // Half of lockAtLeastFor (99 ms) is less than the pause a retry may draw (up to
    // retryDelayMs, 100 ms): the pause is drawn within what is left of the window.
    const key = 'report:2026-01-01T05:00:00.000Z';
    const redisKey = `distlock:{node-cron:${key}}`;
    const { l, admin } = await splitSetUp(redisKey);
    await admin[0]?.pexpire(redisKey, 40); // the other instance's attempt ends by itself
    const coordinator = runCoordinator(l, { lockAtLeastFor: 198 });
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.99);
    try {
      // Before: the pause drawn (99 ms) ended past the window, so the fire was given up.
      expect(await coordinator.shouldRun(key, 10_000)).toBe(true);
    } finally {
      random.mockRestore();
    }
    await coordinator.onComplete(key);
  });

  it('takes a tick on a retry for what is left of its times since it was first asked', async () => {
    const key = 'distlock:{schedule:late}';
    const { l, admin, before } = await splitSetUp(key);
    const times = { lockAtMostFor: 5_000, lockAtLeastFor: LOCK_AT_LEAST_FOR };
    const askedMs = (() => {
      const firstAsked = performance.now();
      return () => performance.now() - firstAsked;
    })();
    const taking = lockTick(l, 'schedule:late', times);
    await anotherTake(admin[1] as Redis, before); // the first attempt split the votes
    await delay(RETRIED_AFTER_MS);
    await admin[0]?.del(key); // the other instance's attempt ends: a retry gets the tick
    const lock = await taking;
    expect(lock).not.toBeNull();
    // The key ends lockAtMostFor after the tick was first asked (as if the first attempt had
    // got it), give or take the take's way to the node (at most the per-node timeout, 200 ms).
    // Before: lockAtMostFor after the retry, which could make the next tick skip everywhere.
    let readFrom = askedMs();
    const ttlMs = Number(await admin[1]?.pttl(key));
    expect(ttlMs).toBeLessThanOrEqual(times.lockAtMostFor - readFrom + NODE_TIMEOUT_MS);
    // Released at once, it stays until lockAtLeastFor after the tick was first asked (before:
    // after the retry, 1 s later), give or take the release's way to the node.
    const releasing = askedMs();
    await lock?.release();
    readFrom = askedMs();
    const keptMs = Number(await admin[1]?.pttl(key));
    const readTo = askedMs();
    // The slack: the times are rounded to ms, and counted from the retry's own start.
    expect(keptMs).toBeLessThanOrEqual(LOCK_AT_LEAST_FOR - releasing + 50);
    expect(keptMs).toBeGreaterThanOrEqual(LOCK_AT_LEAST_FOR - readTo - 2);
  });

  it('ends the window with the last outcome once what is left is no TTL the locker takes', async () => {
    const { l } = await splitSetUp('distlock:{schedule:short}');
    // lockAtMostFor 250 with a per-node timeout of 200: a retry about 100 ms later has 150 ms
    // left, not a TTL above the per-node timeout.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.99);
    try {
      const times = { lockAtMostFor: 250, lockAtLeastFor: 250 };
      const error = await lockTick(l, 'schedule:short', times).catch((e: unknown) => e);
      // Not an InvalidArgumentError about ttlMs, which the caller never chose.
      expect(error).toBeInstanceOf(NoQuorumError);
    } finally {
      random.mockRestore();
    }
  });

  it('gives up once half of lockAtLeastFor has passed without a majority', async () => {
    const key = 'report:2026-01-01T04:00:00.000Z';
    const { l } = await splitSetUp(`distlock:{node-cron:${key}}`);
    const coordinator = runCoordinator(l, { lockAtLeastFor: LOCK_AT_LEAST_FOR });
    const startedAt = performance.now();
    const error = await coordinator.shouldRun(key, 10_000).catch((e: unknown) => e);
    const tookMs = performance.now() - startedAt;
    expect(error).toBeInstanceOf(NoQuorumError);
    // No attempt starts past half of it: the last pause ends before then.
    expect(tookMs).toBeGreaterThan(LOCK_AT_LEAST_FOR / 2 - DEFAULTS.retryDelayMs);
    // The last attempt: a per-node timeout (200 ms) and the undo; far below the whole.
    expect(tookMs).toBeLessThan(LOCK_AT_LEAST_FOR);
  });
});
