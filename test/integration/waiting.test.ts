import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Locker } from '../../src/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);

/** Attempts per second and per waiter that two waiters make on a busy resource. */
async function attemptsPerSecond(waiters: readonly Locker[], fair: boolean): Promise<number> {
  let attempts = 0;
  for (const waiter of waiters) waiter.events.on('retry', () => attempts++);
  const started = performance.now();
  const options = { ttlMs: 10_000, waitMs: 1_500, fair };
  await Promise.all(
    waiters.map((waiter) =>
      expect(waiter.acquire('report', options)).rejects.toMatchObject({ code: 'ACQUIRE_TIMEOUT' }),
    ),
  );
  return attempts / waiters.length / ((performance.now() - started) / 1_000);
}

/** A holder on nodes 0 and 1 only: node 2 was down while it acquired, and came back empty. */
async function holdOnBareMajority(): Promise<void> {
  const node = fixture().redis.nodes[2];
  await node?.kill();
  await locker().acquire('report', { ttlMs: 10_000 });
  await node?.restart();
}

describe('a waiter on a lock held by a bare majority', () => {
  for (const fair of [false, true]) {
    it(`retries at its polling rate, not woken by its own undo (${fair ? 'fair' : 'plain'})`, async () => {
      await locker().acquire('report', { ttlMs: 10_000 });
      const allNodes = await attemptsPerSecond([locker(), locker()], fair);
      await Promise.all(fixture().admin.map((client) => client.flushall()));

      await holdOnBareMajority();
      const bareMajority = await attemptsPerSecond([locker(), locker()], fair);
      // Before the fix: thousands per second, each undo of node 2 waking the waiter itself.
      expect(allNodes).toBeLessThan(20);
      expect(bareMajority).toBeLessThan(2 * allNodes);
    });
  }
});

describe('wake-ups over pub/sub', () => {
  it('resubscribe after the subscriber connection was down when waiters subscribed', async () => {
    const { urls } = fixture().redis;
    const admin = fixture().admin[0] as Redis;
    const nodes = urls.slice(0, 1);
    const holder = locker({ nodes });
    const waiter = locker({ nodes, retryDelayMs: 2_000 }); // polling alone would take ~2 s
    const held = await holder.acquire('b', { ttlMs: 10_000 });
    await holder.acquire('a', { ttlMs: 10_000 });
    // A first wait opens the waiter's subscriber connection.
    await expect(waiter.acquire('a', { ttlMs: 1_000, waitMs: 100 })).rejects.toThrow();
    // Then it drops, and cannot come back while the node refuses new connections.
    const clients = String(await admin.client('LIST'))
      .trim()
      .split('\n');
    // (It stays subscribed to the locker's channel.)
    const subscriberId = clients.find((c) => c.includes('cmd=subscribe'))?.match(/id=(\d+)/)?.[1];
    let waits: Promise<unknown>[];
    await admin.config('SET', 'maxclients', String(clients.length - 1));
    try {
      await admin.client('KILL', 'ID', subscriberId as string);
      waits = Array.from({ length: 4 }, () =>
        waiter.acquire('b', { ttlMs: 1_000, waitMs: 8_000 }).then((lock) => lock.release()),
      );
      await delay(300); // every waiter tried to subscribe while the subscriber was down
    } finally {
      await admin.config('SET', 'maxclients', '10000');
    }
    await delay(500); // it reconnects
    // The locker's one channel is subscribed again.
    const [, subscribers] = (await admin.pubsub(
      'NUMSUB',
      ...((await admin.pubsub('CHANNELS', 'distlock:wake:*')) as string[]),
    )) as [string, number];
    expect(subscribers).toBe(1);
    const releasedAt = performance.now();
    await held.release();
    await Promise.race(waits.map((w) => w.then(() => performance.now())));
    expect(performance.now() - releasedAt).toBeLessThan(500); // not the ~2 s polling delay
    await Promise.all(waits);
  });
});
