import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { AcquireTimeoutError, type Locker } from '../../src/index.js';
import { until } from '../../src/testing/until.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);
const QUEUE = 'distlock:{printer}:queue';
const WAITER = new URL('../support/waiter-process.ts', import.meta.url).pathname;

/** Starts `count` fair waiters 30 ms apart; resolves the order in which they got the lock. */
async function servedOrder(count: number, urls: readonly string[]): Promise<number[]> {
  const holder = await locker({ nodes: urls }).acquire('printer', { ttlMs: 10_000 });
  const order: number[] = [];
  const waiters: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const waiter = locker({ nodes: urls });
    waiters.push(
      waiter.acquire('printer', { ttlMs: 5_000, waitMs: 10_000, fair: true }).then(async (lock) => {
        order.push(i);
        await lock.release();
      }),
    );
    await delay(30);
  }
  await holder.release();
  await Promise.all(waiters);
  return order;
}

describe('fair acquisition', () => {
  it('serves waiters in arrival order on one node', async () => {
    expect(await servedOrder(6, fixture().redis.urls.slice(0, 1))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await fixture().admin[0]?.zcard(QUEUE)).toBe(0);
  });

  it('serves waiters in arrival order on three nodes (Redlock)', async () => {
    expect(await servedOrder(6, fixture().redis.urls)).toEqual([0, 1, 2, 3, 4, 5]);
    const lines = await Promise.all(fixture().admin.map((client) => client.zcard(QUEUE)));
    expect(lines).toEqual([0, 0, 0]);
  });

  it('wakes the first waiter on its own channel, not after its polling delay', async () => {
    const holder = await locker().acquire('printer', { ttlMs: 10_000 });
    const slowPoll = { retryDelayMs: 2_000 };
    const first = locker(slowPoll).acquire('printer', { ttlMs: 5_000, waitMs: 8_000, fair: true });
    await delay(30);
    const second = locker(slowPoll).acquire('printer', { ttlMs: 5_000, waitMs: 8_000, fair: true });
    await delay(100);
    let releasedAt = performance.now();
    await holder.release();
    const firstLock = await first;
    expect(performance.now() - releasedAt).toBeLessThan(250); // polling: >= 1000 ms
    releasedAt = performance.now();
    await firstLock.release();
    await (await second).release();
    expect(performance.now() - releasedAt).toBeLessThan(250);
  });

  it('takes a waiter that gave up out of the line at once', async () => {
    const holder = await locker().acquire('printer', { ttlMs: 10_000 });
    const quitter = locker().acquire('printer', { ttlMs: 1_000, waitMs: 100, fair: true });
    await delay(20);
    const next = locker({ retryDelayMs: 2_000 }).acquire('printer', {
      ttlMs: 1_000,
      waitMs: 5_000,
      fair: true,
    });
    await expect(quitter).rejects.toMatchObject({ code: 'ACQUIRE_TIMEOUT' });
    expect(await Promise.all(fixture().admin.map((c) => c.zcard(QUEUE)))).toEqual([1, 1, 1]);
    const releasedAt = performance.now();
    await holder.release();
    await (await next).release();
    expect(performance.now() - releasedAt).toBeLessThan(250); // polling: >= 1000 ms
  });

  it('drops a waiter that died, once its deadline passed', async () => {
    const { admin } = fixture();
    // A waiter that joined first and then vanished: first in line on every node for 800 ms.
    const ghostTicket = (Date.now() - 1_000) * 1_000;
    await Promise.all(
      admin.map(async (client) => {
        const [seconds = 0, micros = 0] = (await client.time()).map(Number);
        const now = seconds * 1_000 + Math.floor(micros / 1_000);
        await client.zadd(QUEUE, ghostTicket, 'ghost');
        await client.zadd('distlock:{printer}:queue-deadlines', now + 800, 'ghost');
      }),
    );
    const started = performance.now();
    const lock = await locker({ retryDelayMs: 50 }).acquire('printer', {
      ttlMs: 1_000,
      waitMs: 5_000,
      fair: true,
    });
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThan(700);
    expect(waited).toBeLessThan(1_500);
    await lock.release();
    expect(await Promise.all(admin.map((c) => c.zcard(QUEUE)))).toEqual([0, 0, 0]);
  });

  it('drops a waiter that was killed within about a second, whatever the TTL', async () => {
    const urls = fixture().redis.urls;
    const holder = await locker().acquire('printer', { ttlMs: 100_000 });
    const waiter = spawn(
      process.execPath,
      ['--import', 'tsx', WAITER, 'printer', 'fair', ...urls],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await new Promise((resolve) => waiter.stdout.once('data', resolve)); // in line
    waiter.kill('SIGKILL');
    await new Promise((resolve) => waiter.once('exit', resolve));
    // Every line key expires: a line whose waiters all died does not stay forever.
    const ttls = await Promise.all(
      fixture().admin.flatMap((c) => [c.pttl(QUEUE), c.pttl(`${QUEUE}-deadlines`)]),
    );
    for (const ttl of ttls) expect(ttl > 0 && ttl <= 1_000, `PTTL ${ttl}`).toBe(true);
    await holder.release();
    const started = performance.now();
    const options = { ttlMs: 100_000, waitMs: 15_000, fair: true };
    const lock = await locker().acquire('printer', options);
    // The dead waiter holds the free lock until its place expires: 8.25 s before, with a
    // patience derived from the 100 s TTL's node timeout; now max(1 s, 5 x retryDelayMs).
    expect(performance.now() - started).toBeLessThan(1_800);
    await lock.release();
  });

  // Redis reaps a line's expired keys one by one, and a clock set back revives one it had not
  // reaped yet: a queue whose waiters' deadlines are gone. Such a waiter at the front held the
  // line shut for as long as others kept joining it (simulation seed 1475091695).
  const wait = { ttlMs: 5_000, waitMs: 3_000 };
  it.each([
    ['a lock', 'distlock:{printer}', (l: Locker) => l.acquire('printer', { ...wait, fair: true })],
    [
      'a read-write lock',
      'distlock:{doc}:rw',
      (l: Locker) => l.readWriteLock('doc').write.acquire(wait),
    ],
    [
      'a semaphore',
      'distlock:{pool}:permits',
      (l: Locker) => l.semaphore('pool', { permits: 1 }).acquire({ ...wait, fair: true }),
    ],
  ])('drops a waiter left in line without its deadline, on %s', async (_kind, base, take) => {
    const admin = fixture().admin[0] as Redis;
    await admin.zadd(`${base}:queue`, 0, 'ghost');
    const held = await take(locker({ nodes: fixture().redis.urls.slice(0, 1) }));
    await held.release();
    expect(await admin.zscore(`${base}:queue`, 'ghost')).toBeNull();
  });

  it('forgets a waiting writer no longer in line, so readers still wait behind the writers that do', async () => {
    // The waiting writers' key revived alone: its ghost, first by ticket, hid the writer
    // waiting behind a reader, and a new reader went ahead of that writer.
    const admin = fixture().admin[0] as Redis;
    const one = { nodes: fixture().redis.urls.slice(0, 1) };
    const doc = () => locker(one).readWriteLock('doc');
    const reading = await doc().read.acquire({ ttlMs: 20_000 });
    // Slow polling keeps the writer's place for 5 s (5 x retryDelayMs) between its attempts,
    // every 1.9 s: a stall of this machine does not drop it from the line meanwhile.
    const writer = locker({ ...one, retryDelayMs: 1_000 }).readWriteLock('doc');
    const writing = writer.write.acquire({ ttlMs: 5_000, waitMs: 20_000 });
    await until(
      'the writer in line',
      async () => {
        const writers = await admin.zcard('distlock:{doc}:rw:queue-writers');
        return writers === 1 ? { done: true } : { reason: `${writers} waiting writers` };
      },
      5_000,
    );
    await admin.zadd('distlock:{doc}:rw:queue-writers', 0, 'ghost');
    await expect(doc().read.acquire({ ttlMs: 5_000, waitMs: 600 })).rejects.toThrow(
      AcquireTimeoutError,
    );
    expect(await admin.zscore('distlock:{doc}:rw:queue-writers', 'ghost')).toBeNull();
    await reading.release();
    await (await writing).release();
  });
});
