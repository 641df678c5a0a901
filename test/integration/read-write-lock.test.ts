import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { IORedisConnection } from '../../src/driver/ioredis.js';
import { RELEASE_NODE_TIMEOUT_MS } from '../../src/engine/every-node.js';
import { AcquireTimeoutError, InvalidArgumentError, NoQuorumError } from '../../src/index.js';
import { readWriteTakeScript } from '../../src/kinds/rwlock/lua/read-write-take.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(5);
const locker = useLockers(fixture);
const WRITER = 'distlock:{doc}:rw:writer';
const READERS = 'distlock:{doc}:rw:readers';

describe('a read-write lock', () => {
  for (const nodes of [1, 5]) {
    it(`lets readers share it, and a writer in alone (${nodes} node(s))`, async () => {
      const urls = fixture().redis.urls.slice(0, nodes);
      const doc = locker({ nodes: urls }).readWriteLock('doc');
      const readers = await Promise.all(
        [1, 2, 3].map(() => doc.read.tryAcquire({ ttlMs: 10_000 })),
      );
      expect(readers.every((r) => r !== null)).toBe(true);
      expect(await doc.write.tryAcquire({ ttlMs: 10_000 })).toBeNull();
      for (const r of readers) await r?.release();
      const writer = await doc.write.tryAcquire({ ttlMs: 10_000 });
      expect(writer).not.toBeNull();
      expect(await doc.read.tryAcquire({ ttlMs: 10_000 })).toBeNull();
      expect(await doc.write.tryAcquire({ ttlMs: 10_000 })).toBeNull();
      await writer?.release();
      const left = await Promise.all(
        fixture()
          .admin.slice(0, nodes)
          .map((a) => a.keys('distlock:{doc}*')),
      );
      expect(left.flat()).toEqual([]);
    });
  }

  it('does not let a stream of readers starve a writer: readers that come later wait behind it', async () => {
    const { urls } = fixture().redis;
    const doc = locker({ nodes: urls }).readWriteLock('doc');
    const early = await doc.read.acquire({ ttlMs: 10_000 });
    const order: string[] = [];
    const writing = locker({ nodes: urls, retryDelayMs: 2_000 })
      .readWriteLock('doc')
      .write.acquire({ ttlMs: 5_000, waitMs: 8_000 })
      .then(async (w) => {
        order.push('writer');
        await delay(50);
        order.push('writer done');
        await w.release();
      });
    await delay(100); // the writer waits in line
    // Before a writer-first policy, this reader would join the early one at once.
    expect(await doc.read.tryAcquire({ ttlMs: 5_000 })).toBeNull();
    const late = locker({ nodes: urls, retryDelayMs: 2_000 })
      .readWriteLock('doc')
      .read.acquire({ ttlMs: 5_000, waitMs: 8_000 })
      .then(async (r) => {
        order.push('late reader');
        await r.release();
      });
    await delay(100);
    const releasedAt = performance.now();
    await early.release();
    await Promise.all([writing, late]);
    expect(order).toEqual(['writer', 'writer done', 'late reader']);
    // Woken over pub/sub: polling every 1-3 s would take far longer.
    expect(performance.now() - releasedAt).toBeLessThan(1_000);
  });

  it("frees a crashed reader's hold at its TTL", async () => {
    const doc = locker().readWriteLock('doc');
    await doc.read.acquire({ ttlMs: 300 }); // never released
    expect(await doc.write.tryAcquire({ ttlMs: 1_000 })).toBeNull();
    await delay(350);
    const writer = await doc.write.tryAcquire({ ttlMs: 1_000 });
    expect(writer).not.toBeNull();
    await writer?.release();
  });

  it('on 5 nodes, needs a majority for either side: each of the 32 sets of nodes held by the other side', async () => {
    const admin = fixture().admin;
    // The verdict counts each node's yes or no: a node that answers late on a busy machine
    // (the default node timeout at a 10 s TTL is 50 ms) would count as neither: each node gets
    // as long as a release gives it.
    const doc = locker({ nodeTimeoutMs: RELEASE_NODE_TIMEOUT_MS }).readWriteLock('doc');
    for (let held = 0; held < 32; held++) {
      const heldNodes = admin.filter((_, i) => held & (1 << i));
      const expected = heldNodes.length <= 2; // 3 of 5 left
      await Promise.all(admin.map((a: Redis) => a.del(WRITER, READERS)));
      for (const a of heldNodes) await a.set(WRITER, 'other', 'PX', 60_000);
      const reader = await doc.read.tryAcquire({ ttlMs: 10_000 });
      expect({ held, reader: reader !== null }).toEqual({ held, reader: expected });
      await reader?.release();
      await Promise.all(admin.map((a: Redis) => a.del(WRITER, READERS)));
      for (const a of heldNodes) await a.zadd(READERS, Date.now() + 60_000, 'other');
      const writer = await doc.write.tryAcquire({ ttlMs: 10_000 });
      expect({ held, writer: writer !== null }).toEqual({ held, writer: expected });
      await writer?.release();
      // Nothing of ours is left: no writer, and only the other side's readers.
      const writers = await Promise.all(admin.map((a) => a.exists(WRITER)));
      const readers = (await Promise.all(admin.map((a) => a.zrange(READERS, 0, -1)))).flat();
      expect({ held, writers, readers }).toEqual({
        held,
        writers: [0, 0, 0, 0, 0],
        readers: heldNodes.map(() => 'other'),
      });
    }
  });

  it('keeps working with two of 5 nodes down, and says it needs 3 when a third is', async () => {
    const { urls, nodes } = fixture().redis;
    const doc = locker({ nodes: urls }).readWriteLock('doc');
    nodes[0]?.pause();
    await nodes[1]?.kill();
    const reader = await doc.read.acquire({ ttlMs: 5_000, waitMs: 0 });
    await reader.release();
    const writer = await doc.write.acquire({ ttlMs: 5_000, waitMs: 0 });
    await writer.release();
    await nodes[2]?.kill();
    const error = await doc.write.acquire({ ttlMs: 5_000, waitMs: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as Error).message).toMatch(/2 of 5 node\(s\) agreed, 3 needed/);
  });

  it('cannot upgrade: a reader that asks to write waits for its own read lock', async () => {
    const doc = locker().readWriteLock('doc');
    const reading = await doc.read.acquire({ ttlMs: 10_000 });
    expect(await doc.write.tryAcquire({ ttlMs: 10_000 })).toBeNull();
    await expect(doc.write.acquire({ ttlMs: 10_000, waitMs: 200 })).rejects.toBeInstanceOf(
      AcquireTimeoutError,
    );
    await reading.release();
    const writing = await doc.write.tryAcquire({ ttlMs: 10_000 });
    expect(writing).not.toBeNull();
    await writing?.release();
  });

  it('rejects bad arguments before any I/O, naming the field', () => {
    const l = locker();
    expect(() => l.readWriteLock('')).toThrow(InvalidArgumentError);
    const doc = l.readWriteLock('doc');
    const fenced = { ttlMs: 1_000, fencing: true } as Parameters<typeof doc.write.acquire>[0];
    expect(() => doc.write.acquire(fenced)).toThrow(expect.objectContaining({ field: 'fencing' }));
    expect(() => doc.read.acquire({ ttlMs: 0 })).toThrow(
      expect.objectContaining({ field: 'ttlMs' }),
    );
  });
});

describe('the read-write line', () => {
  it('orders a reader and a writer that drew the same ticket by their tokens, as the line does', async () => {
    const admin = fixture().admin[0] as Redis;
    const node = new IORedisConnection(admin);
    const take = (token: string, mode: 'read' | 'write', ticket: number) =>
      readWriteTakeScript.run(
        node,
        {
          key: 'distlock:{doc}:rw',
          token,
          attempt: 1,
          unanswered: [],
          ttlMs: 10_000,
          mode,
          line: { ticket, waiterTimeoutMs: 5_000, wakeChannel: 'PUBLISH w' },
        },
        1_000,
      );
    await admin.set(WRITER, 'holder', 'PX', 60_000);
    expect(await take('a-reader', 'read', 7)).toBeGreaterThan(0); // in line behind the holder
    expect(await take('b-writer', 'write', 7)).toBeGreaterThan(0);
    await admin.del(WRITER);
    // Before: each compared the other's ticket and waited for it, so neither ever got in.
    expect(await take('b-writer', 'write', 7)).toBe(-2); // 'a-reader' is ahead
    expect(await take('a-reader', 'read', 7)).toBe(0);
  });
});
