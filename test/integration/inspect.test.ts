import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CONNECT_GRACE_MS } from '../../src/driver/connection.js';
import {
  type ForceReleaseResult,
  InvalidArgumentError,
  Locker,
  LockLostError,
  NoReplyError,
} from '../../src/index.js';
import { startClockedRedis } from '../simulation/clocked-redis.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);
const oneNode = useLockers(fixture, () => fixture().redis.urls.slice(0, 1));

/** What a caller would log: JSON with fences as strings, and the object printed whole. */
const json = (value: unknown) =>
  JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v)) +
  inspect(value, { depth: 10 });

/**
 * The random tokens stored on node 0 for `resource`, the holder's and every waiter's, without
 * the owner label that follows each (`<token>.<since>.<label>`).
 */
async function storedTokens(resource: string): Promise<string[]> {
  const admin = fixture().admin[0];
  const holder = (await admin?.get(`distlock:{${resource}}`)) ?? '';
  const waiters = (await admin?.zrange(`distlock:{${resource}}:queue`, 0, -1)) ?? [];
  return [holder, ...waiters]
    .map((value) => value.split(/[.:]/)[0] ?? '')
    .filter((token) => token.length > 0);
}

/** Resolves once `count` waiters are in line and every node has the waiters' channel subscribed. */
async function waitersReady(inspector: Locker, resource: string, count: number) {
  for (;;) {
    const { waiters } = await inspector.inspect(resource);
    const channels = await Promise.all(
      fixture().admin.map((admin) => admin.pubsub('CHANNELS', 'distlock:wake:*')),
    );
    if (waiters >= count && channels.every((c) => (c as string[]).length > 0)) return;
    await delay(10);
  }
}

describe('locker.inspect', () => {
  it('shows held or free, the remaining lease, the fence and the waiters, never a token', async () => {
    const inspector = locker();
    const free = await inspector.inspect('report');
    expect(free).toMatchObject({ state: 'free', held: false, heldOn: 0, quorum: 2, fence: null });
    expect(free.nodes.map((n) => [n.reachable, n.held, n.remainingMs, n.waiters])).toEqual(
      Array(3).fill([true, false, null, 0]),
    );

    const lock = await locker().acquire('report', { ttlMs: 10_000, fencing: true });
    const waiting = locker().acquire('report', { ttlMs: 10_000, waitMs: 20_000 });
    await waitersReady(inspector, 'report', 1);
    const held = await inspector.inspect('report');
    expect(held).toMatchObject({ state: 'held', held: true, heldOn: 3, fence: 1n, waiters: 1 });
    expect(held.remainingMs).toBeGreaterThan(0);
    expect(held.remainingMs).toBeLessThanOrEqual(10_000);
    for (const node of held.nodes) {
      expect(node).toMatchObject({ reachable: true, held: true, fence: 1n, waiters: 1 });
      expect(node.remainingMs).toBeLessThanOrEqual(10_000);
    }
    const tokens = await storedTokens('report');
    expect(tokens).toHaveLength(2); // the holder's and the waiter's
    for (const token of tokens) {
      expect(token).toMatch(/^[\w-]{22}$/);
      expect(json(held)).not.toContain(token);
    }

    await lock.release();
    await (await waiting).release();
  });

  it('names who holds it: the owner label and start of the holder, then of the waiter handed it', async () => {
    const inspector = locker();
    const holder = locker({ owner: 'report-worker.eu-1: nightly ünïcode/%' });
    const startedAt = Date.now();
    const lock = await holder.acquire('report', { ttlMs: 10_000 });
    expect(lock.owner).toBe('report-worker.eu-1: nightly ünïcode/%');
    const held = await inspector.inspect('report');
    expect(held.owner).toBe('report-worker.eu-1: nightly ünïcode/%');
    // In the servers' time, read with INFO: off by at most half its round trip, within the
    // connect grace.
    expect(held.since?.getTime()).toBeGreaterThanOrEqual(startedAt - CONNECT_GRACE_MS / 2);
    expect(held.since?.getTime()).toBeLessThanOrEqual(Date.now() + CONNECT_GRACE_MS / 2);
    expect(held.nodes.map((n) => n.owner)).toEqual(Array(3).fill(held.owner));
    // An acquisition's own owner, and the waiter is named once the lock is handed to it.
    const waiting = locker().acquire('report', { ttlMs: 10_000, waitMs: 20_000, owner: 'w-2' });
    await waitersReady(inspector, 'report', 1);
    await lock.release();
    const next = await waiting;
    expect((await inspector.inspect('report')).owner).toBe('w-2');
    await next.release();
    expect(await inspector.inspect('report')).toMatchObject({ owner: null, since: null });
    // By default the host and pid; none with `owner: false`.
    const byDefault = await locker().acquire('report', { ttlMs: 10_000 });
    expect((await inspector.inspect('report')).owner).toBe(`${hostname()}:${process.pid}`);
    await byDefault.release();
    const anonymous = await locker({ owner: false }).acquire('report', { ttlMs: 10_000 });
    expect(anonymous.owner).toBeUndefined();
    expect(await inspector.inspect('report')).toMatchObject({ held: true, owner: null });
    await anonymous.release();
  });

  it('checks an owner label before any I/O, naming the field', () => {
    for (const owner of ['', 'x'.repeat(101), 'line\nbreak', '\uD800', 42]) {
      expect(() => locker({ owner: owner as string })).toThrow(InvalidArgumentError);
      const call = () => locker().acquire('r', { ttlMs: 1_000, owner: owner as string });
      expect(call).toThrow('`owner`');
    }
  });

  it('reports a key PERSISTed by hand as held without expiry, never a negative or NaN time', async () => {
    const inspector = locker();
    const lock = await locker().acquire('report', { ttlMs: 10_000, fencing: true });
    const [first, second] = fixture().admin;
    const remaining = async () => {
      const found = await inspector.inspect('report');
      expect(found.nodes.every((n) => n.held && n.reachable)).toBe(true);
      return [found.remainingMs, ...found.nodes.map((n) => n.remainingMs)];
    };
    expect(await first?.persist('distlock:{report}')).toBe(1);
    // One node of three without expiry: a quorum still lets the key expire, within its TTL.
    const [quorumMs, ...one] = await remaining();
    expect(one[0]).toBeNull();
    for (const ms of [quorumMs, one[1], one[2]]) {
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThanOrEqual(10_000);
    }
    expect(await second?.persist('distlock:{report}')).toBe(1);
    // Two of three: a quorum keeps it until someone deletes it.
    const [noneMs, ...two] = await remaining();
    expect(noneMs).toBeNull();
    expect(two.slice(0, 2)).toEqual([null, null]);
    expect(two[2]).toBeGreaterThan(0);
    const found = await inspector.inspect('report');
    expect(found).toMatchObject({ state: 'held', held: true, heldOn: 3, fence: 1n });
    expect(json(found)).not.toMatch(/:-\d|: -\d|NaN|Infinity/); // no negative number
    expect(await lock.release()).toBe('released'); // its token still matches
  });

  it('works on a single node: a quorum of one', async () => {
    const single = oneNode();
    const lock = await single.acquire('report', { ttlMs: 5_000 });
    const held = await single.inspect('report');
    expect(held).toMatchObject({ state: 'held', heldOn: 1, quorum: 1, waiters: 0 });
    expect(held.nodes).toHaveLength(1);
    expect(held.remainingMs).toBeGreaterThan(0);
    expect(held.remainingMs).toBeLessThanOrEqual(5_000);
    await lock.release();
    expect((await single.inspect('report')).state).toBe('free');
  });

  it('reports a stopped node with its cause within the per-node timeout', async () => {
    const inspector = locker();
    const lock = await inspector.acquire('report', { ttlMs: 10_000 });
    const stopped = fixture().redis.nodes[2];
    await stopped?.pause();
    const startedAt = performance.now();
    const seen = await inspector.inspect('report', { timeoutMs: 300 });
    const elapsedMs = performance.now() - startedAt;
    expect(seen).toMatchObject({ state: 'held', heldOn: 2 });
    const [, , silent] = seen.nodes;
    expect(silent).toMatchObject({ reachable: false, held: false, remainingMs: null });
    expect(silent?.error).toBeInstanceOf(NoReplyError);
    expect(silent?.error).toMatchObject({ timeoutMs: 300 });
    expect(elapsedMs).toBeGreaterThanOrEqual(290); // it did wait for the node
    expect(elapsedMs).toBeLessThan(4 * 300); // but no longer than its timeout (and slack)

    // Two of three nodes stopped: nobody can tell whether the lock is held.
    await fixture().redis.nodes[1]?.pause();
    const unknown = await locker().inspect('report', { timeoutMs: 300 });
    expect(unknown).toMatchObject({ state: 'unknown', held: false, heldOn: 1 });
    await lock.release();
  });

  it('refuses one server listed twice, as an acquisition does', async () => {
    const { redis } = fixture();
    const lock = await oneNode().acquire('twice', { ttlMs: 10_000 });
    // 127.1 is 127.0.0.1: the first server twice, so "2 of 3" would be one server.
    const twice = [redis.urls[0], `redis://127.1:${redis.nodes[0]?.port}`, redis.urls[1]];
    const seen = await locker({ nodes: twice as string[] })
      .inspect('twice')
      .catch((error: unknown) => error);
    // Before: "held", on 2 of 3 nodes.
    expect(seen).toBeInstanceOf(InvalidArgumentError);
    expect((seen as InvalidArgumentError).field).toBe('nodes[1]');
    await lock.release();
  });

  it('rejects bad input synchronously, naming the field', () => {
    const inspector = locker();
    for (const call of [
      () => inspector.inspect(''),
      () => inspector.forceRelease(42 as unknown as string),
    ]) {
      expect(call).toThrow(InvalidArgumentError);
      expect(call).toThrow(/`resource`/);
    }
    expect(() => inspector.inspect('r', { timeoutMs: 0 })).toThrow(/`timeoutMs`/);
    expect(() => inspector.forceRelease('r', { timeoutMs: 1.5 })).toThrow(/`timeoutMs`/);
    expect(() => inspector.inspect('r', { timeout: 5 } as object)).toThrow(/timeoutMs/);
  });
});

describe("the start of a hold, in the server's time", () => {
  it("is read from the server, on a locker's first acquisition and after it", async () => {
    // A server whose clock says an hour later than this process's (and stands still).
    const serverMs = Date.now() + 3_600_000;
    const clocked = await startClockedRedis(BigInt(serverMs) * 1_000n);
    const locker = new Locker({ nodes: [clocked.server.url], owner: 'clocked' });
    try {
      const starts: number[] = [];
      locker.events.on('acquired', (event) => starts.push(event.since?.getTime() ?? 0));
      // The first acquisition built its token before the server said what time it is.
      const first = await locker.acquire('job', { ttlMs: 10_000 });
      expect((await locker.inspect('job')).since?.getTime()).toBe(starts[0]);
      await first.release();
      await (await locker.acquire('job', { ttlMs: 10_000 })).release();
      // Off by at most half an INFO round trip, within the connect grace.
      for (const start of starts) {
        expect(Math.abs(start - serverMs)).toBeLessThanOrEqual(CONNECT_GRACE_MS / 2);
      }
      expect(starts).toHaveLength(2);
    } finally {
      await locker.close();
      await clocked.stop();
    }
  });
});

describe('locker.forceRelease', () => {
  it('hands the lock to the first waiter at once; the old holder learns at its next extend', async () => {
    const operator = locker();
    const events: ForceReleaseResult[] = [];
    operator.events.on('forceReleased', (event) => events.push(event));
    const holder = await locker().acquire('report', { ttlMs: 30_000, fencing: true });
    // Without a wake-up the waiter asks again only after a pause of at least
    // 0.5 x retryDelayMs (5 s).
    const retryDelayMs = 10_000;
    const waiter = locker({ retryDelayMs });
    const waiting = waiter.acquire('report', { ttlMs: 10_000, waitMs: 30_000, fencing: true });
    await waitersReady(operator, 'report', 1);

    const startedAt = performance.now();
    const done = await operator.forceRelease('report');
    const next = await waiting;
    const tookMs = performance.now() - startedAt;
    expect(tookMs).toBeLessThan(retryDelayMs / 4); // woken, not polling

    expect(done).toMatchObject({ resource: 'report', result: 'released', handedOver: true });
    expect(done.nodes.map((n) => n.action)).toEqual(Array(3).fill('handed-over'));
    expect(events).toEqual([done]);
    expect(next.fence).toBeGreaterThan(holder.fence ?? 0n);

    await expect(holder.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });
    expect(holder.signal.aborted).toBe(true);
    expect(holder.signal.reason).toBeInstanceOf(LockLostError);
    expect(await holder.release()).toBe('not-held');
    expect(await next.release()).toBe('released');
  });

  it("ends an auto-extended holder's work: its signal fires by its next extension", async () => {
    const ttlMs = 1_000;
    const holder = locker();
    let startedAt = 0;
    const work = holder.withLock('report', { ttlMs }, async (signal) => {
      await locker().forceRelease('report');
      startedAt = performance.now();
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return performance.now() - startedAt;
    });
    await expect(work).rejects.toBeInstanceOf(LockLostError);
    // The lease the holder last extended runs out within ttlMs, and the loss is told by then.
    expect(performance.now() - startedAt).toBeLessThan(2 * ttlMs);
    const { state } = await holder.inspect('report');
    expect(state).toBe('free');
  });

  it('deletes without waiters, says not-held when free, and reports a stopped node', async () => {
    const operator = locker();
    const lock = await locker().acquire('report', { ttlMs: 10_000 });
    const tokens = await storedTokens('report');
    await fixture().redis.nodes[2]?.pause();
    const done = await operator.forceRelease('report', { timeoutMs: 300 });
    expect(done).toMatchObject({ result: 'released', handedOver: false });
    expect(done.nodes.map((n) => n.action)).toEqual(['deleted', 'deleted', 'failed']);
    expect(done.nodes[2]?.error).toBeInstanceOf(NoReplyError);
    for (const token of tokens) expect(json(done)).not.toContain(token);
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });

    fixture().redis.nodes[2]?.resume();
    await fixture().admin[2]?.del('distlock:{report}'); // what the stopped node still holds
    const again = await locker().forceRelease('report');
    expect(again).toMatchObject({ result: 'not-held', handedOver: false });
    expect(again.nodes.map((n) => n.action)).toEqual(Array(3).fill('absent'));

    // Two of three nodes stopped: the lock may still be held there.
    await locker().acquire('report', { ttlMs: 10_000 });
    for (const node of fixture().redis.nodes.slice(1)) await node.pause();
    const failed = await locker().forceRelease('report', { timeoutMs: 300 });
    expect(failed.result).toBe('failed');
    expect(failed.nodes.map((n) => n.action)).toEqual(['deleted', 'failed', 'failed']);
  });
});
