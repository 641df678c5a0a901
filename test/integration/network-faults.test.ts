import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RELEASE_NODE_TIMEOUT_MS } from '../../src/engine/every-node.js';
import { type Locker, NoQuorumError } from '../../src/index.js';
import { type Fault, FaultProxy } from '../../src/testing/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(5);
const KEY = 'distlock:{r}';
let proxies: FaultProxy[] = [];
let subscribers: Redis[] = [];
/** Per node, the keyspace events seen for KEY: 'del' (deleted by a script) or 'expired'. */
let events: string[][] = [];

beforeAll(async () => {
  const { redis } = fixture();
  proxies = await Promise.all(redis.nodes.map((node) => FaultProxy.start(node.port)));
});

beforeEach(async () => {
  for (const proxy of proxies) proxy.set({ mode: 'pass' });
  const { redis, admin } = fixture();
  await Promise.all(admin.map((client) => client.config('SET', 'notify-keyspace-events', 'Egx')));
  events = redis.nodes.map(() => []);
  subscribers = redis.urls.map((url) => new Redis(url));
  await Promise.all(
    subscribers.map(async (subscriber, index) => {
      subscriber.on('message', (channel: string, key: string) => {
        if (key === KEY) events[index]?.push(channel.split(':').pop() as string);
      });
      await subscriber.subscribe('__keyevent@0__:del', '__keyevent@0__:expired');
    }),
  );
});

afterEach(async () => {
  for (const subscriber of subscribers) subscriber.disconnect();
});

afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
});

const proxiedLocker = useLockers(fixture, () => proxies.map((p) => p.url));

/**
 * A first lock and release: the locker met every node, and recorded the longest TTL the tests
 * ask for (a longer one would be recorded first, a round of its own: see redlock.test.ts).
 */
async function warm(l: Locker): Promise<void> {
  await (await l.acquire('warm', { ttlMs: 10_000 })).release();
}

function setAll(fault: Fault, which = [0, 1, 2, 3, 4]): void {
  for (const index of which) proxies[index]?.set(fault);
}

describe('Redlock through a fault proxy', () => {
  it('fails when replies are delayed past the TTL, and deletes the key rather than let it expire', async () => {
    // A warm-up reply slower than the timeout would leave that node marked as stalled (and
    // skipped) in the round under test; 100 ms leaves room for a loaded CI machine.
    const l = proxiedLocker({ nodeTimeoutMs: 100 });
    await warm(l);
    setAll({ mode: 'delay', delayMs: 500 });
    const error = await l.acquire('r', { ttlMs: 300, waitMs: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as NoQuorumError).nodes.map((n) => n.outcome)).toEqual(Array(5).fill('timeout'));
    await delay(450); // past the TTL: an undeleted key would have expired by now
    expect(events).toEqual(Array(5).fill(['del']));
    expect(await Promise.all(fixture().admin.map((c) => c.exists(KEY)))).toEqual([0, 0, 0, 0, 0]);
  });

  it('never hands out a lock whose validity the delay used up', async () => {
    // Replies arrive after 600 ms, inside the node timeout; 600 ms + 452 ms drift > 1000 ms TTL.
    const l = proxiedLocker({ driftFactor: 0.45, nodeTimeoutMs: 900 });
    await warm(l);
    setAll({ mode: 'delay', delayMs: 600 });
    const error = await l.acquire('r', { ttlMs: 1_000, waitMs: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as Error).message).toMatch(/too late/);
    expect((error as NoQuorumError).nodes.map((n) => n.outcome)).toEqual(Array(5).fill('yes'));
    // The deletes reached every node before the keys' own expiry (a 'del', not an 'expired').
    expect(events).toEqual(Array(5).fill(['del']));
  });

  it('shrinks the validity by the time the replies took', async () => {
    const l = proxiedLocker({ nodeTimeoutMs: 500 });
    await warm(l);
    const prompt = await l.acquire('prompt', { ttlMs: 2_000 });
    const promptMs = prompt.remainingMs();
    await prompt.release();

    setAll({ mode: 'delay', delayMs: 100 });
    const slow = await l.acquire('r', { ttlMs: 2_000 });
    const slowMs = slow.remainingMs();
    expect(promptMs).toBeGreaterThan(2_000 - 22 - 15);
    // The proxy's 100 ms timer may fire up to 1 ms early: libuv keeps loop time in whole ms.
    expect(slowMs).toBeLessThanOrEqual(2_000 - 100 - 22 + 1);
    expect(slowMs).toBeGreaterThan(2_000 - 100 - 22 - 60);
    setAll({ mode: 'pass' });
    expect(await slow.release()).toBe('released');
  });

  it('reports a release whose replies are slower than the per-node timeout as released', async () => {
    // Under load (1,000 releases at once), deletes that were done reported 'failed'. A release
    // claims no validity: it waits for each node up to its own, longer timeout.
    const l = proxiedLocker({ nodeTimeoutMs: 25 });
    const lock = await l.acquire('r', { ttlMs: 5_000 });
    const delayMs = 200; // 8 x the node timeout, well within the release's own
    expect(delayMs).toBeLessThan(RELEASE_NODE_TIMEOUT_MS / 2);
    setAll({ mode: 'delay', delayMs });
    expect(await lock.release()).toBe('released');
    expect(await Promise.all(fixture().admin.map((c) => c.exists(KEY)))).toEqual([0, 0, 0, 0, 0]);
  });

  it('locks with two black-holed nodes and undoes their keys once traffic flows again', async () => {
    const l = proxiedLocker({ nodeTimeoutMs: 200 });
    await warm(l);
    setAll({ mode: 'blackhole' }, [0, 1]);
    const started = performance.now();
    const lock = await l.acquire('r', { ttlMs: 10_000, waitMs: 0 });
    expect(performance.now() - started).toBeLessThan(150); // no wait for the silent nodes
    expect(await lock.release()).toBe('released');
    setAll({ mode: 'pass' }, [0, 1]);
    await delay(50);
    expect(await Promise.all(fixture().admin.map((c) => c.exists(KEY)))).toEqual([0, 0, 0, 0, 0]);
  });

  it('counts reset connections as failed votes, with the cause', async () => {
    // A busy node answers in two round trips here (SET, then the reclaim script's first call,
    // an EVAL): more than the 25 ms default on a loaded host.
    const l = proxiedLocker({ nodeTimeoutMs: 200 });
    await warm(l);
    setAll({ mode: 'reset' }, [0, 1]);
    await fixture().admin[2]?.set(KEY, 'other', 'PX', 10_000);
    await delay(50);
    const error = await l.tryAcquire('r', { ttlMs: 5_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    const [a, b, ...rest] = (error as NoQuorumError).nodes;
    // A reset node is down (refused at once) or caught mid-reconnect (silent until the timeout).
    for (const node of [a, b]) {
      if (node?.outcome === 'error')
        expect(node.error.message).toMatch(/not connected|reset|closed/i);
      else expect(node?.outcome).toBe('timeout');
    }
    expect(rest.map((n) => n.outcome)).toEqual(['no', 'yes', 'yes']);
    setAll({ mode: 'pass' }, [0, 1]);
  });

  for (const fencing of [false, true]) {
    it(`recognises its own key when a SET landed but the reply and the undo were lost (${fencing ? 'fenced' : 'plain'})`, async () => {
      const proxy = proxies[0] as FaultProxy;
      const l = proxiedLocker({ nodes: [proxy.url], nodeTimeoutMs: 500 });
      await (await l.acquire('warm', { ttlMs: 1_000, fencing })).release(); // loads the script
      proxy.set({ mode: 'delay', delayMs: 5_000 });
      const acquiring = l.acquire('r', { ttlMs: 5_000, waitMs: 3_000, fencing });
      const admin = fixture().admin[0] as Redis;
      while ((await admin.exists(KEY)) === 0) await delay(2); // the SET landed...
      proxy.set({ mode: 'reset' }); // ...its reply is lost, and the undo cannot be sent
      await delay(50);
      proxy.set({ mode: 'pass' });
      const started = performance.now();
      const lock = await acquiring; // before: ACQUIRE_TIMEOUT, "held by another for 4,9xx ms"
      expect(performance.now() - started).toBeLessThan(1_500);
      expect(await admin.pttl(KEY)).toBeGreaterThan(4_000); // renewed by the winning attempt
      expect(await lock.release()).toBe('released');
      expect(await admin.exists(KEY)).toBe(0);
    });
  }
});
