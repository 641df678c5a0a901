import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { IORedisConnection } from '../../src/driver/ioredis.js';
import type { Lock } from '../../src/index.js';
import { releaseScript } from '../../src/kinds/mutex/lua/release.js';
import { BARGE_WINDOW_MS } from '../../src/lua/waiting-line.js';
import { FaultProxy } from '../../src/testing/index.js';
import { useClockedRedis, useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);
const clocked = useClockedRedis();
const proxies: FaultProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});
const WAITER = new URL('../support/waiter-process.ts', import.meta.url).pathname;

/** Calls of `command` the node has served so far. */
async function calls(admin: Redis, command: string): Promise<number> {
  const stats = String(await admin.info('commandstats'));
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

/** One node, its admin client, and 'report' held there for `ttlMs` (the scripts loaded). */
async function heldOnOneNode(ttlMs: number) {
  const urls = fixture().redis.urls.slice(0, 1);
  const admin = fixture().admin[0] as Redis;
  const holderLocker = locker({ nodes: urls });
  await (await holderLocker.acquire('warm-up', { ttlMs: 10_000 })).release(); // scripts loaded
  const holder = await holderLocker.acquire('report', { ttlMs });
  return { urls, admin, holder };
}

describe('a release hands the lock to the first waiter', () => {
  for (const nodes of [1, 3]) {
    it(`serves plain waiters in arrival order, and once the front has waited the releaser cannot barge back in (${nodes} node(s))`, async () => {
      const urls = fixture().redis.urls.slice(0, nodes);
      const holderLocker = locker({ nodes: urls });
      const holder = await holderLocker.acquire('report', { ttlMs: 10_000 });
      const order: number[] = [];
      const waits: Promise<void>[] = [];
      for (let i = 0; i < 4; i++) {
        const lock = locker({ nodes: urls, retryDelayMs: 2_000 }).acquire('report', {
          ttlMs: 5_000,
          waitMs: 8_000,
        });
        waits.push(
          lock.then(async (l) => {
            order.push(i);
            // Held past the barging window, which each hand-over starts: a release right
            // away would let anyone take the lock, the releaser below too.
            await delay(10 * BARGE_WINDOW_MS);
            await l.release();
          }),
        );
        await delay(40);
      }
      await holder.release(); // the first waiter joined 160 ms ago: past the barging window
      // Before: the key was deleted, and the releaser, asking at once, took it again.
      expect(await holderLocker.tryAcquire('report', { ttlMs: 5_000 })).toBeNull();
      await Promise.all(waits);
      expect(order).toEqual([0, 1, 2, 3]);
      const left = await Promise.all(fixture().admin.map((a) => a.keys('distlock:{report}*')));
      expect(left.flat()).toEqual([]);
    });
  }

  it('wakes one waiter per release, not all of them', async () => {
    const { urls, admin, holder } = await heldOnOneNode(10_000);
    const slow = locker({ nodes: urls, retryDelayMs: 5_000 });
    const waits = Array.from({ length: 20 }, () =>
      slow.acquire('report', { ttlMs: 5_000, waitMs: 10_000 }),
    );
    await delay(300); // all in line, sleeping out their polling delay
    const before = await calls(admin, 'evalsha');
    await holder.release();
    const first = await Promise.race(waits);
    await delay(100);
    const after = await calls(admin, 'evalsha');
    // The release alone: on one node the woken waiter holds from its message. Before: all 20
    // retried (SET, then a script each); then the woken waiter confirmed with a script.
    expect(after - before).toBe(1);
    await first.release();
    await Promise.all(waits.map((wait) => wait.then((lock) => lock.release()))); // one by one
  });

  it('listens on one channel per locker, however many resources it waits for', async () => {
    const admin = fixture().admin[0] as Redis;
    const urls = fixture().redis.urls.slice(0, 1);
    const holder = locker({ nodes: urls });
    const held = await Promise.all(
      Array.from({ length: 20 }, (_, i) => holder.acquire(`r${i}`, { ttlMs: 10_000 })),
    );
    const waiter = locker({ nodes: urls });
    const subscribesBefore = await calls(admin, 'subscribe');
    const waits = Array.from({ length: 20 }, (_, i) =>
      waiter.acquire(`r${i}`, { ttlMs: 5_000, waitMs: 8_000 }),
    );
    await delay(200);
    expect(await admin.pubsub('CHANNELS', 'distlock:wake:*')).toHaveLength(1);
    // Once, and once more as its new connection reports ready (harmless).
    expect((await calls(admin, 'subscribe')) - subscribesBefore).toBeLessThanOrEqual(2);
    await Promise.all(held.map((l) => l.release()));
    await Promise.all((await Promise.all(waits)).map((l) => l.release()));
  });

  it('draws a new fencing token for the waiter it hands the lock to', async () => {
    const holder = await locker().acquire('ledger', { ttlMs: 10_000, fencing: true });
    const waiting = locker({ retryDelayMs: 5_000 }).acquire('ledger', {
      ttlMs: 5_000,
      waitMs: 8_000,
      fencing: true,
    });
    await delay(150);
    const releasedAt = performance.now();
    await holder.release();
    const next = await waiting;
    expect(performance.now() - releasedAt).toBeLessThan(1_000); // woken, not polling
    expect(next.fence).toBeGreaterThan(holder.fence ?? Number.POSITIVE_INFINITY);
    await next.release();
  });

  it('gives a lock handed to a waiter that died back no later than its deadline in line (3 nodes: to be confirmed)', async () => {
    const urls = fixture().redis.urls;
    const holder = await locker().acquire('report', { ttlMs: 30_000 });
    const child = spawn(process.execPath, ['--import', 'tsx', WAITER, 'report', 'plain', ...urls], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    await delay(100); // its attempt that joined the line has landed everywhere
    child.kill('SIGKILL');
    const next = locker().acquire('report', { ttlMs: 5_000, waitMs: 10_000 });
    await delay(50);
    const releasedAt = performance.now();
    await holder.release(); // handed to the dead waiter, first in line
    const ttls = await Promise.all(fixture().admin.map((a) => a.pttl('distlock:{report}')));
    for (const ttl of ttls) expect(ttl).toBeLessThanOrEqual(1_000); // its deadline, not a TTL
    await (await next).release();
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
  });

  it('hands a waiter on one node the lock for its TTL: one that died holds it up that long', async () => {
    const urls = fixture().redis.urls.slice(0, 1);
    const holder = await locker({ nodes: urls }).acquire('report', { ttlMs: 30_000 });
    const child = spawn(process.execPath, ['--import', 'tsx', WAITER, 'report', 'plain', ...urls], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    await delay(100); // its attempt after the first subscription has landed, renewing its place
    child.kill('SIGKILL');
    await holder.release(); // handed to the dead waiter, first in line, for its TTL (100 s)
    expect(await (fixture().admin[0] as Redis).pttl('distlock:{report}')).toBeGreaterThan(90_000);
    await (fixture().admin[0] as Redis).del('distlock:{report}');
  });

  it('leaves the line, and releases, on a node that had stopped answering', async () => {
    // The waiter joined the line on every node; then node 0 stopped answering, so its locker
    // sent node 0 nothing more, and it got the lock on the other two. Before: it did not
    // leave node 0's line, nor release there; once node 0 answered again, the holder's
    // release there handed the lock to the waiter that was done, and node 0 kept it for the
    // waiter's deadline in line (up to 1 s), nobody's.
    const [stopped] = fixture().redis.nodes;
    const admin = fixture().admin[0] as Redis;
    const holder = await locker().acquire('report', { ttlMs: 30_000 });
    const waiting = locker().acquire('report', { ttlMs: 5_000, waitMs: 10_000 });
    await delay(100); // in line on every node
    stopped?.pause();
    await delay(800); // a poll to node 0 outlived its timeout: node 0 counts as stalled
    const releasing = holder.release(); // handed over on nodes 1 and 2
    await (await waiting).release();
    await releasing;
    stopped?.resume();
    await delay(200);
    expect(await admin.keys('distlock:{report}*')).toEqual([]);
  });

  it('leaves the lock on the nodes whose yes came after the verdict', async () => {
    // A fenced acquisition waits in line from its first attempt; the line is left on every
    // node that had not said yes when the majority was reached. Before: that deleted the
    // lock on the third node, which had granted it a moment later.
    for (let i = 0; i < 20; i++) {
      const lock = await locker().acquire(`ledger:${i}`, { ttlMs: 10_000, fencing: true });
      await delay(20);
      const held = await Promise.all(
        fixture().admin.map((a) => a.exists(`distlock:{ledger:${i}}`)),
      );
      expect(held).toEqual([1, 1, 1]);
      await lock.release();
    }
  });
});

describe('a hand-over counted from its message (one node)', () => {
  /** A holder, and a waiter in line behind it that sleeps out a long polling delay. */
  async function waiterInLine(ttlMs: number) {
    const { urls, admin, holder } = await heldOnOneNode(30_000);
    const waiterLocker = locker({ nodes: urls, retryDelayMs: 10_000 });
    const askedBefore = performance.now();
    const waiting = waiterLocker.acquire('report', { ttlMs, waitMs: 20_000 });
    while ((await admin.zcard('distlock:{report}:queue')) === 0) await delay(5);
    return { admin, holder, waiting, askedBefore };
  }

  it('holds from the message, its validity counted from its last request, not from the message', async () => {
    const ttlMs = 10_000;
    const { admin, holder, waiting, askedBefore } = await waiterInLine(ttlMs);
    await delay(1_000); // the waiter's last request is now a second old
    const before = await calls(admin, 'evalsha');
    await holder.release();
    const lock = await waiting;
    const heardAt = performance.now();
    expect(await calls(admin, 'evalsha')).toBe(before + 1); // the release alone
    // Counted from the message, it would have about its whole TTL left.
    expect(lock.remainingMs()).toBeLessThanOrEqual(ttlMs - (heardAt - askedBefore) + 50);
    // The key outlives the validity: it was set for the waiter's TTL at the hand-over.
    expect(await admin.pttl('distlock:{report}')).toBeGreaterThanOrEqual(lock.remainingMs());
    expect(await lock.release()).toBe('released');
    expect(await admin.keys('distlock:{report}*')).toEqual([]);
  });

  it('confirms instead when its subscriber connected again since its last request', async () => {
    const { admin, holder, waiting } = await waiterInLine(10_000);
    // The waiter's subscriber connects in the background: on a busy machine, after it joined.
    let id: string | undefined;
    while (id === undefined) {
      const subscriber = String(await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
      id = /id=(\d+)/.exec(subscriber)?.[1];
      if (id === undefined) await delay(5);
    }
    await admin.client('KILL', 'ID', id);
    // Subscribed again: a channel of its own, with a subscriber (not this test's) on it.
    for (;;) {
      const subscribers = (await admin.pubsub('NUMSUB', ...(await channels(admin)))) as unknown[];
      if (subscribers.some((count) => Number(count) > 0)) break;
      await delay(5);
    }
    const before = await calls(admin, 'evalsha');
    await holder.release();
    const lock = await waiting;
    // The release, then the waiter's confirmation: the message came over a connection that the
    // waiter's request did not precede, so it does not count.
    expect(await calls(admin, 'evalsha')).toBe(before + 2);
    await lock.release();
  });

  it('confirms instead when its last request is older than half its TTL', async () => {
    const ttlMs = 1_000;
    const { admin, holder, waiting } = await waiterInLine(ttlMs);
    await delay(ttlMs / 2 + 100);
    const before = await calls(admin, 'evalsha');
    await holder.release();
    const lock = await waiting;
    expect(await calls(admin, 'evalsha')).toBe(before + 2);
    expect(lock.remainingMs()).toBeGreaterThan(ttlMs / 2); // a fresh lease, from the confirmation
    await lock.release();
  });
});

/** The wake-up channels that the line's waiters left for a release. */
async function channels(admin: Redis): Promise<string[]> {
  const entries = await admin.hvals('distlock:{report}:queue-wake');
  return entries.flatMap((entry) => /PUBLISH (\S+)$/.exec(entry)?.[1] ?? []);
}

describe('bounded barging', () => {
  for (const nodes of [1, 3]) {
    it(`serves a plain waiter while a worker releases and asks again at once (${nodes} node(s))`, async () => {
      const urls = fixture().redis.urls.slice(0, nodes);
      const greedy = locker({ nodes: urls });
      let lock = await greedy.acquire('report', { ttlMs: 5_000 });
      let waited: number | undefined;
      const startedAt = performance.now();
      const waiting = locker({ nodes: urls })
        .acquire('report', { ttlMs: 5_000, waitMs: 8_000 })
        .then(async (l) => {
          waited = performance.now() - startedAt;
          await l.release();
        });
      let rounds = 0;
      // Release and take it again as fast as possible, while the waiter waits.
      while (waited === undefined && performance.now() - startedAt < 8_000) {
        await lock.release();
        lock = await greedy.acquire('report', { ttlMs: 5_000, waitMs: 8_000 });
        rounds++;
      }
      await lock.release();
      await waiting;
      // Each release inside the barging window wakes the waiter, and the first release after
      // it (10 ms, BARGE_WINDOW_MS) hands it the lock: served within a few round trips of
      // that, far below its waitMs. (That the window ends barging is checked script by
      // script in scripts.test.ts.)
      expect(waited).toBeDefined();
      expect(waited).toBeLessThan(2_000);
      expect(rounds).toBeGreaterThan(0);
    });
  }

  /**
   * Another client holds the lock on a server whose clock stands still ("other", attempt 1),
   * so that the line's turn, once the waiter starts it, stays young (its barging window
   * open), and a waiter's locker reaches that server through a proxy. `release(n)` ends the
   * other's attempt `n`, as a release by its holder; `retake(n)` takes the lock again as its
   * attempt `n`.
   */
  async function otherHolderAndProxiedWaiter() {
    const { admin, port } = clocked();
    const node = IORedisConnection.of(admin);
    const proxy = await FaultProxy.start(port);
    proxies.push(proxy);
    const key = 'distlock:{report}';
    await admin.set(key, 'other:1', 'PX', 60_000);
    // Polling alone would ask again 1.25-3.75 s later (retryDelayMs 2 s: see pollingMs).
    const waiter = locker({ nodes: [proxy.url], retryDelayMs: 2_000, nodeTimeoutMs: 1_000 });
    return {
      admin,
      proxy,
      waiter,
      inLine: async () => {
        while ((await admin.zcard(`${key}:queue`)) === 0) await delay(1);
      },
      release: (attempt: number) =>
        releaseScript.run(node, { key, token: 'other', attempt, announce: true }, 1_000),
      retake: (attempt: number) => admin.set(key, `other:${attempt}`, 'PX', 60_000),
    };
  }

  /** `free` frees the lock; the waiter must have it well before its next poll. */
  async function servedBeforeAPoll(acquired: Promise<Lock>, free: () => Promise<void>) {
    await free();
    const freedAt = performance.now();
    const lock = await acquired;
    // Before: it waited for its next poll, 1.25 s after its last ask at the earliest.
    expect(performance.now() - freedAt).toBeLessThan(1_000);
    await lock.release();
  }

  it('wakes the front once per turn, and the front asks again when the window is over', async () => {
    const { admin, proxy, waiter, inLine, release, retake } = await otherHolderAndProxiedWaiter();
    const acquired = waiter.acquire('report', { ttlMs: 5_000, waitMs: 10_000 });
    await inLine();
    await delay(100); // its subscription is up by now
    // The waiter hears of releases, and its replies come, 200 ms late.
    proxy.set({ mode: 'delay', delayMs: 200 });
    expect(await release(1)).toBe(1); // leaves the lock free, wakes the front...
    await retake(2); // ...and its holder takes it back at once
    await delay(300); // the woken waiter asked meanwhile, and found it taken
    const woken = await calls(admin, 'publish');
    await servedBeforeAPoll(acquired, async () => {
      expect(await release(2)).toBe(1); // free again...
      expect(await calls(admin, 'publish')).toBe(woken); // ...with no second wake-up in the turn
    });
  });

  it("asks again when the window is over after its locker's first subscription, whose wake-up it missed", async () => {
    const { proxy, waiter, inLine, release, retake } = await otherHolderAndProxiedWaiter();
    await (await waiter.acquire('warm-up', { ttlMs: 5_000 })).release();
    // From its first busy attempt on, every reply (and its subscription's) comes 200 ms late.
    proxy.set({ mode: 'delay', delayMs: 200 });
    // The locker's first wait: once subscribed, it asks again at once (a retry of 0 ms).
    const subscribed = new Promise<void>((resolve) =>
      waiter.events.on('retry', ({ delayMs }) => delayMs === 0 && resolve()),
    );
    const acquired = waiter.acquire('report', { ttlMs: 5_000, waitMs: 10_000 });
    await inLine();
    expect(await release(1)).toBe(1); // wakes the front: not subscribed yet, it misses it
    await retake(2); // taken back at once
    // It asks again, and finds the lock taken (its request reaches the node at once, the
    // answer 200 ms later); then the lock is free, and no release will wake the waiter.
    await subscribed;
    await delay(50);
    await servedBeforeAPoll(acquired, async () => {
      expect(await release(2)).toBe(1);
    });
  });
});
