import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  ForeignDataError,
  fencedPeek,
  fencedRead,
  fencedReadForUpdate,
  fencedWrite,
  InvalidArgumentError,
  NoReplyError,
  readFenced,
} from '../../src/index.js';
import { FaultProxy } from '../../src/testing/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(5);
const locker = useLockers(fixture);
const KEY = 'distlock:{account}';
const FENCE = 'distlock:{account}:fence';

describe('fencing tokens', () => {
  it('grow strictly with every holder, on one node and on five', async () => {
    for (const urls of [fixture().redis.urls.slice(0, 1), fixture().redis.urls]) {
      const lockers = [locker({ nodes: urls }), locker({ nodes: urls })];
      const fences: bigint[] = [];
      for (let i = 0; i < 20; i++) {
        const lock = await lockers[i % 2]?.acquire('account', { ttlMs: 5_000, fencing: true });
        fences.push(lock?.fence as bigint);
        await lock?.release();
      }
      expect(fences.every((f, i) => i === 0 || f > (fences[i - 1] as bigint))).toBe(true);
    }
  });

  it('stay monotone across majorities whose counters disagree', async () => {
    const { admin } = fixture();
    // History left node 0's counter far ahead of the others.
    await Promise.all(admin.map((c, i) => c.set(FENCE, i === 0 ? '100' : '5')));
    // A gets nodes 0, 1, 2 (3 and 4 are taken by someone else).
    await Promise.all([3, 4].map((i) => admin[i]?.set(KEY, 'other', 'PX', 10_000)));
    const a = await locker().acquire('account', { ttlMs: 5_000, waitMs: 0, fencing: true });
    expect(a.fence).toBe(101n);
    await a.release();
    // B gets nodes 2, 3, 4: only node 2 is shared with A's majority.
    await Promise.all([3, 4].map((i) => admin[i]?.del(KEY)));
    await Promise.all([0, 1].map((i) => admin[i]?.set(KEY, 'other', 'PX', 10_000)));
    const b = await locker().acquire('account', { ttlMs: 5_000, waitMs: 0, fencing: true });
    expect(b.fence).toBeGreaterThan(a.fence as bigint);
    await b.release();
  });

  it('work in fair mode too', async () => {
    const l = locker();
    const first = await l.acquire('account', { ttlMs: 5_000, fair: true, fencing: true });
    const second = await l
      .acquire('account', { ttlMs: 5_000, fair: true, fencing: true, waitMs: 0 })
      .catch(() => null);
    expect(second).toBeNull();
    await first.release();
    const third = await l.acquire('account', { ttlMs: 5_000, fair: true, fencing: true });
    expect(third.fence).toBeGreaterThan(first.fence as bigint);
    await third.release();
  });

  it('keep growing across an empty restart of the one node that keeps the counter', async () => {
    const { redis, admin } = fixture();
    const [node] = redis.nodes;
    const [, store] = admin; // the protected store: another server, which keeps its memory
    if (!node || !store) throw new Error('no node');
    const nodes = redis.urls.slice(0, 1);
    const before: bigint[] = [];
    for (let i = 0; i < 5; i++) {
      const lock = await locker({ nodes }).acquire('account', { ttlMs: 5_000, fencing: true });
      before.push(lock.fence as bigint);
      expect(await fencedWrite(store, 'balance', lock.fence as bigint, `v${i}`)).toBe('applied');
      await lock.release();
    }
    await node.restart(); // same port, no persistence: the counter is gone
    // No grace: this is about the counter, not about waiting out the leases the node granted.
    const after = await locker({ nodes, restartGraceMs: 0 }).acquire('account', {
      ttlMs: 5_000,
      fencing: true,
    });
    expect(after.fence).toBeGreaterThan(before.at(-1) as bigint);
    expect(await fencedWrite(store, 'balance', after.fence as bigint, 'after')).toBe('applied');
    await after.release();
  });

  it('are absent unless asked for', async () => {
    const lock = await locker().acquire('account', { ttlMs: 5_000 });
    expect(lock.fence).toBeUndefined();
    expect(await fixture().admin[0]?.exists(FENCE)).toBe(0);
    await lock.release();
  });
});

describe('fenced writes', () => {
  it('keep the old names of the reads as deprecated aliases of the new ones', () => {
    expect(fencedRead).toBe(fencedReadForUpdate);
    expect(readFenced).toBe(fencedPeek);
  });

  it('refuse a write whose fence is older than one already applied', async () => {
    const client = fixture().admin[0];
    if (!client) throw new Error('no node');
    expect(await fencedWrite(client, 'balance', 5n, 'a')).toBe('applied');
    expect(await fencedWrite(client, 'balance', 4n, 'b')).toBe('stale');
    expect(await fencedWrite(client, 'balance', 5n, 'c')).toBe('applied');
    expect(await fencedWrite(client, 'balance', 10n ** 30n, 'd')).toBe('applied');
    expect(await fencedWrite(client, 'balance', 10n ** 29n, 'e')).toBe('stale');
    expect(await fencedPeek(client, 'balance')).toEqual({ value: 'd', fence: 10n ** 30n });
  });

  it('add no listeners to the client, however many calls share it', async () => {
    const client = fixture().admin[0];
    if (!client) throw new Error('no node');
    await fencedWrite(client, 'listeners', 1n, 'first');
    const before = [client.listenerCount('error'), client.listenerCount('ready')];
    for (let fence = 2n; fence < 30n; fence += 1n) {
      await fencedReadForUpdate(client, 'listeners', fence);
      await fencedWrite(client, 'listeners', fence, String(fence));
      await fencedPeek(client, 'listeners');
    }
    expect([client.listenerCount('error'), client.listenerCount('ready')]).toEqual(before);
  });

  it('stop a holder whose lease ran out from overwriting the next holder', async () => {
    const client = fixture().admin[0];
    if (!client) throw new Error('no node');
    const slow = await locker().acquire('account', { ttlMs: 200, fencing: true });
    await delay(250); // the holder stalls past its lease
    const next = await locker().acquire('account', { ttlMs: 5_000, fencing: true });
    expect(await fencedWrite(client, 'balance', next.fence as bigint, 'new')).toBe('applied');
    expect(await fencedWrite(client, 'balance', slow.fence as bigint, 'late')).toBe('stale');
    expect((await fencedPeek(client, 'balance')).value).toBe('new');
    await next.release();
  });

  it('claim on read, so an older holder cannot write between a newer read and write', async () => {
    const client = fixture().admin[0];
    if (!client) throw new Error('no node');
    await fencedWrite(client, 'counter', 1n, '10');
    expect(await fencedReadForUpdate(client, 'counter', 3n)).toEqual({ value: '10' }); // newer holder reads
    expect(await fencedWrite(client, 'counter', 2n, '11')).toBe('stale'); // older one is locked out
    expect(await fencedReadForUpdate(client, 'counter', 2n)).toBe('stale');
    expect(await fencedWrite(client, 'counter', 3n, '11')).toBe('applied');
  });

  it('name a key that holds something else, whatever the call', async () => {
    const [admin] = fixture().admin;
    const redis = admin as Redis;
    await redis.set('plain', 'abc');
    await redis.hset('odd-fence', 'fence', 'abc', 'value', 'x');
    await redis.hset('zero-led', 'fence', '0099', 'value', 'x'); // fences never start with 0
    const calls = {
      fencedWrite: (key: string) => fencedWrite(redis, key, 1n, 'v'),
      fencedReadForUpdate: (key: string) => fencedReadForUpdate(redis, key, 1n),
      fencedPeek: (key: string) => fencedPeek(redis, key),
    };
    for (const [name, call] of Object.entries(calls)) {
      for (const [key, found] of [
        ['plain', /another type than a hash \(WRONGTYPE\)/],
        ['odd-fence', /fence "abc"/],
        ['zero-led', /fence "0099"/],
      ] as const) {
        const error = await call(key).then(
          () => new Error(`${name} on ${key} resolved`),
          (e: unknown) => e,
        );
        expect(error, `${name} on ${key}`).toBeInstanceOf(ForeignDataError);
        expect((error as ForeignDataError).code).toBe('FOREIGN_DATA');
        expect((error as ForeignDataError).key).toBe(key);
        expect((error as Error).message).toMatch(found);
      }
    }
    // Nothing was written over the foreign values.
    expect(await redis.get('plain')).toBe('abc');
    expect(await redis.hgetall('odd-fence')).toEqual({ fence: 'abc', value: 'x' });
  });

  it('reject bad input synchronously', () => {
    const client = fixture().admin[0];
    if (!client) throw new Error('no node');
    expect(() => fencedWrite(client, '', 1n, 'x')).toThrow(InvalidArgumentError);
    expect(() => fencedWrite(client, 'k', 1 as unknown as bigint, 'x')).toThrow(/`fence`/);
    expect(() => fencedWrite(client, 'k', -1n, 'x')).toThrow(/`fence`/);
    expect(() => fencedWrite(client, 'k', 1n, 2 as unknown as string)).toThrow(/`value`/);
    expect(() => fencedWrite(client, 'k', 1n, 'x', { timeoutMs: 0 })).toThrow(/`timeoutMs`/);
    expect(() => fencedPeek(client, 'k', { timeoutMs: Number.NaN })).toThrow(/`timeoutMs`/);
  });

  it('give up on a connection that stops answering, saying the command may have run', async () => {
    const proxy = await FaultProxy.start(fixture().redis.nodes[0]?.port as number);
    const client = new Redis(proxy.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await client.connect();
      expect(await fencedWrite(client, 'silent', 1n, 'a', { timeoutMs: 300 })).toBe('applied');
      proxy.set({ mode: 'hold', direction: 'replies' }); // the write arrives; its reply does not
      const started = performance.now();
      const write = fencedWrite(client, 'silent', 2n, 'b', { timeoutMs: 300 });
      await expect(write).rejects.toBeInstanceOf(NoReplyError);
      await expect(write).rejects.toThrow(/within 300 ms: it may or may not have run/);
      expect(performance.now() - started).toBeGreaterThanOrEqual(299);
      const reads = [
        fencedReadForUpdate(client, 'silent', 3n, { timeoutMs: 300 }),
        fencedPeek(client, 'silent', { timeoutMs: 300 }),
      ];
      for (const read of reads) await expect(read).rejects.toMatchObject({ code: 'NO_REPLY' });
      // It did run: the store holds the write that got no answer.
      expect(await fencedPeek(fixture().admin[0] as Redis, 'silent')).toEqual({
        value: 'b',
        fence: 3n,
      });
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });
});
