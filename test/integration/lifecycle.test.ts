import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockLostError } from '../../src/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const KEY = 'distlock:{job}';
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(() => {
  process.on('unhandledRejection', onUnhandled);
});
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
});

const locker = useLockers(fixture);

afterEach(async () => {
  await delay(10); // let any stray rejection surface
  expect(unhandled).toEqual([]);
});

/** Resolves with the instant the signal aborted. */
function abortedAt(signal: AbortSignal): Promise<number> {
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(performance.now())),
  );
}

describe('lost-lock signal', () => {
  it('is aborted when first read after the deadline, without waiting a tick', async () => {
    const lock = await locker().acquire('job', { ttlMs: 200 });
    await delay(250);
    expect(lock.remainingMs()).toBe(0);
    const { signal } = lock;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(signal.reason.message).toMatch(/validity ran out/);
  });

  it('is aborted when read after the deadline while its timer is still due', async () => {
    const lock = await locker().acquire('job', { ttlMs: 200 });
    expect(lock.signal.aborted).toBe(false); // armed at the deadline
    const until = performance.now() + 250;
    while (performance.now() < until); // the event loop is blocked past the deadline
    expect(lock.signal.aborted).toBe(true);
  });

  it('is lost when released after its deadline, before its timer could run', async () => {
    const l = locker();
    const lost: unknown[] = [];
    l.events.on('lost', ({ error }) => lost.push(error));
    const lock = await l.acquire('job', { ttlMs: 200 });
    const { signal } = lock;
    const until = performance.now() + 250;
    while (performance.now() < until); // the event loop is blocked past the deadline
    expect(await lock.release()).toBe('not-held');
    expect(signal.aborted).toBe(true);
    expect(lost).toEqual([signal.reason]);
    // withLock, whose work blocks past the deadline, rejects instead of resolving.
    const work = () => {
      const end = performance.now() + 250;
      while (performance.now() < end);
      return 'done without the lock';
    };
    await expect(l.withLock('job', { ttlMs: 200 }, work)).rejects.toBeInstanceOf(LockLostError);
  });

  it('is not aborted when read after the deadline of a lock released before it', async () => {
    const lock = await locker().acquire('job', { ttlMs: 200 });
    await lock.release();
    await delay(250);
    expect(lock.signal.aborted).toBe(false);
  });

  it('fires before the deadline when auto-extension fails because nodes were killed', async () => {
    const lock = await locker().acquire('job', { ttlMs: 1_000, autoExtend: true });
    const acquired = performance.now();
    const aborted = abortedAt(lock.signal);
    await Promise.all(
      fixture()
        .redis.nodes.slice(0, 2)
        .map((node) => node.kill()),
    );
    const at = await aborted;
    expect(at - acquired).toBeLessThan(1_000 - 12); // the local deadline: ttl - drift
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(lock.remainingMs()).toBe(0);
  });

  it('fires before the deadline when the extension times out on paused nodes', async () => {
    const lock = await locker().acquire('job', { ttlMs: 1_000, autoExtend: true });
    const acquired = performance.now();
    fixture().redis.nodes[0]?.pause();
    fixture().redis.nodes[1]?.pause();
    const at = await abortedAt(lock.signal);
    expect(at - acquired).toBeLessThan(800); // extension at ~490 ms + a 20 ms node timeout
    expect((lock.signal.reason as LockLostError).code).toBe('LOCK_LOST');
  });

  it('fires at the local deadline when nothing extends the lock', async () => {
    const lock = await locker().acquire('job', { ttlMs: 300 });
    const acquired = performance.now();
    const at = await abortedAt(lock.signal);
    expect(at - acquired).toBeGreaterThanOrEqual(300 - 2 - 3 - 15);
    expect(at - acquired).toBeLessThan(300 + 30);
    expect(lock.remainingMs()).toBe(0);
    expect(await lock.release()).toBe('not-held');
  });

  it('does not fire on release, and leaves no timer behind', async () => {
    // Counts distlock's own timers (not ioredis's) started and not yet fired or cleared.
    const live = new Set<unknown>();
    const { setTimeout: set, clearTimeout: clear } = globalThis;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      const timer = set(() => {
        live.delete(timer);
        fn();
      }, ms);
      const caller = new Error().stack?.split('\n')[2] ?? '';
      if (caller.includes('/src/')) live.add(timer);
      return timer;
    }) as typeof setTimeout;
    globalThis.clearTimeout = ((timer: NodeJS.Timeout) => {
      live.delete(timer);
      clear(timer);
    }) as typeof clearTimeout;
    try {
      const l = locker();
      const lock = await l.acquire('job', { ttlMs: 10_000, autoExtend: true });
      expect(live.size).toBeGreaterThanOrEqual(2); // the watchdog and the deadline
      await lock.release();
      expect(lock.signal.aborted).toBe(false);
      await l.close();
      expect(live.size).toBe(0);
    } finally {
      globalThis.setTimeout = set;
      globalThis.clearTimeout = clear;
    }
  });
});

describe('auto-extension', () => {
  it('keeps a lock alive over 10 times its TTL', async () => {
    const lock = await locker().acquire('job', { ttlMs: 200, autoExtend: true });
    await delay(2_200);
    expect(lock.signal.aborted).toBe(false);
    expect(lock.remainingMs()).toBeGreaterThan(0);
    expect(await fixture().admin[0]?.pttl(KEY)).toBeGreaterThan(0);
    expect(await locker().tryAcquire('job', { ttlMs: 1_000 })).toBeNull();
    expect(await lock.release()).toBe('released');
  });

  it("re-plans from the caller's own extension, even a shorter one", async () => {
    const lock = await locker().acquire('job', { ttlMs: 10_000, autoExtend: true });
    await lock.extend(1_500);
    await delay(2_500); // the watchdog planned for the 10 s lease would first extend at 5 s
    expect(lock.signal.aborted).toBe(false);
    expect(lock.remainingMs()).toBeGreaterThan(5_000);
    expect(await fixture().admin[0]?.pttl(KEY)).toBeGreaterThan(5_000);
    expect(await lock.release()).toBe('released');
  });

  it('keeps the resource locked for minHoldMs, however early it is released', async () => {
    const lock = await locker().acquire('job', { ttlMs: 5_000, minHoldMs: 1_000 });
    expect(await lock.release()).toBe('released');
    const pttl = await fixture().admin[0]?.pttl(KEY);
    expect(pttl).toBeGreaterThan(700);
    expect(pttl).toBeLessThanOrEqual(1_000);
    expect(await locker().tryAcquire('job', { ttlMs: 1_000 })).toBeNull();
    expect(() => locker().acquire('job', { ttlMs: 1_000, minHoldMs: 1_001 })).toThrow(
      /`minHoldMs`/,
    );
  });

  it('stops at maxHoldMs: the lock then runs out and its signal fires', async () => {
    const lock = await locker().acquire('job', { ttlMs: 200, autoExtend: true, maxHoldMs: 600 });
    const acquired = performance.now();
    const at = await abortedAt(lock.signal);
    expect(at - acquired).toBeGreaterThan(600 - 200);
    expect(at - acquired).toBeLessThan(600 + 250);
    await delay(20);
    const next = await locker().acquire('job', { ttlMs: 1_000, waitMs: 500 });
    await next.release();
  });

  it('refuses a maxHoldMs shorter than ttlMs, before any I/O: the lease would outlast it', () => {
    // Such a lock was held until ~3,959 ms with maxHoldMs 1000 and ttlMs 4000.
    const options = { ttlMs: 4_000, autoExtend: true, maxHoldMs: 1_000 };
    expect(() => locker().acquire('job', options)).toThrow(
      'Expected `maxHoldMs` to be at least ttlMs = 4000 (a lease lasts its TTL; lower ttlMs to hold for less), got `1000` (number)',
    );
    expect(() => locker().withLock('job', { ttlMs: 4_000, maxHoldMs: 1_000 }, () => 0)).toThrow(
      /`maxHoldMs`/,
    );
    return expect(fixture().admin[0]?.exists(KEY)).resolves.toBe(0);
  });

  it('maxHoldMs equal to ttlMs is allowed: the lock ends at maxHoldMs', async () => {
    const lock = await locker().acquire('job', { ttlMs: 600, autoExtend: true, maxHoldMs: 600 });
    const acquired = performance.now();
    const at = await abortedAt(lock.signal);
    expect(at - acquired).toBeGreaterThan(500);
    expect(at - acquired).toBeLessThan(600 + 100);
  });
});

describe('scoped use', () => {
  it('withLock returns the result, passes the signal and releases', async () => {
    const l = locker();
    const result = await l.withLock('job', { ttlMs: 1_000 }, async (signal) => {
      expect(signal.aborted).toBe(false);
      expect(await fixture().admin[0]?.exists(KEY)).toBe(1);
      return 42;
    });
    expect(result).toBe(42);
    expect(await fixture().admin[0]?.exists(KEY)).toBe(0);
  });

  it('withLock releases when the work throws, and rethrows', async () => {
    const failure = new Error('work failed');
    await expect(
      locker().withLock('job', { ttlMs: 1_000 }, async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await fixture().admin.map((c) => c.exists(KEY))[0]).toBe(0);
  });

  it('withLock reports a loss that happened while the work ran', async () => {
    const work = locker().withLock('job', { ttlMs: 500 }, async (signal) => {
      await Promise.all(
        fixture()
          .redis.nodes.slice(0, 2)
          .map((node) => node.kill()),
      );
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      return 'done';
    });
    await expect(work).rejects.toBeInstanceOf(LockLostError);
  });

  it('await using releases at scope exit', async () => {
    const l = locker();
    {
      await using lock = await l.acquire('job', { ttlMs: 10_000 });
      expect(lock.remainingMs()).toBeGreaterThan(0);
      expect(await fixture().admin[0]?.exists(KEY)).toBe(1);
    }
    expect(await fixture().admin[0]?.exists(KEY)).toBe(0);
  });
});

describe('events', () => {
  it('reports acquired, extended, released and lost, without the token', async () => {
    const l = locker();
    const seen: [string, unknown][] = [];
    for (const name of ['acquired', 'extended', 'released', 'lost', 'retry'] as const) {
      l.events.on(name, (event: unknown) => seen.push([name, event]));
    }
    const lock = await l.acquire('job', { ttlMs: 1_000 });
    await lock.extend();
    await lock.release();
    const short = await l.acquire('job', { ttlMs: 100 });
    await abortedAt(short.signal);
    expect(seen.map(([name]) => name)).toEqual([
      'acquired',
      'extended',
      'released',
      'acquired',
      'lost',
    ]);
    expect(seen.every(([, event]) => (event as { resource: string }).resource === 'job')).toBe(
      true,
    );
    expect(
      JSON.stringify(seen.map(([, e]) => ({ ...(e as object), error: undefined }))),
    ).not.toMatch(/[A-Za-z0-9_-]{22}/);
  });
});
