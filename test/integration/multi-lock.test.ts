import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  AcquireTimeoutError,
  InvalidArgumentError,
  LockBusyError,
  type Locker,
  LockerClosedError,
  LockLostError,
  NoQuorumError,
} from '../../src/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(5);
const locker = useLockers(fixture);

/** How many of `resources` are locked on each node. */
const lockedOn = (resources: readonly string[]) =>
  Promise.all(fixture().admin.map((a) => a.exists(...resources.map((r) => `distlock:{${r}}`))));

describe('acquireAll', () => {
  for (const nodes of [1, 5]) {
    it(`locks every resource or none (${nodes} node(s))`, async () => {
      const urls = fixture().redis.urls.slice(0, nodes);
      const l = locker({ nodes: urls });
      const all = await l.acquireAll(['c', 'a', 'b'], { ttlMs: 10_000 });
      expect(all.resources).toEqual(['a', 'b', 'c']);
      expect((await lockedOn(['a', 'b', 'c'])).slice(0, nodes)).toEqual(Array(nodes).fill(3));
      expect(all.remainingMs()).toBeGreaterThan(9_000);
      expect(await all.release()).toBe('released');

      const other = await locker({ nodes: urls }).acquire('b', { ttlMs: 10_000 });
      const error = await l
        .acquireAll(['a', 'b', 'c'], { ttlMs: 10_000, waitMs: 0 })
        .catch((e) => e);
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as LockBusyError).resource).toBe('b');
      expect(await lockedOn(['a', 'c'])).toEqual([0, 0, 0, 0, 0]); // 'a' was given back
      await other.release();
    });
  }

  it('waits holding nothing, and finishes as soon as the busy one is released', async () => {
    const { urls } = fixture().redis;
    const holder = await locker().acquire('b', { ttlMs: 10_000 });
    const waiting = locker({ retryDelayMs: 2_000 }).acquireAll(['a', 'b'], {
      ttlMs: 10_000,
      waitMs: 8_000,
    });
    await delay(200);
    // 'a' is free meanwhile: the waiter gave it back before it waited for 'b'.
    const a = await locker({ nodes: urls }).tryAcquire('a', { ttlMs: 1_000 });
    expect(a).not.toBeNull();
    await a?.release();
    const releasedAt = performance.now();
    await holder.release();
    const both = await waiting;
    expect(performance.now() - releasedAt).toBeLessThan(1_000); // woken, not polling
    expect(await both.release()).toBe('released');
  });

  /**
   * A caller of acquireAll(['a', 'b']) that waited in a's line (round 1) and was handed 'a':
   * its second round waits for 'b', which another holder keeps for 10 s.
   */
  async function secondRoundWaitingForB(ttlMs: number, waitMs: number) {
    const holderOfA = await locker().acquire('a', { ttlMs: 10_000 });
    const holderOfB = await locker().acquire('b', { ttlMs: 10_000 });
    const waiting = locker({ retryDelayMs: 2_000 }).acquireAll(['a', 'b'], { ttlMs, waitMs });
    waiting.catch(() => undefined); // awaited by each test; not an unhandled rejection meanwhile
    await delay(200); // in a's line, holding nothing
    await holderOfA.release(); // 'a' is handed over: the second round begins with it
    return { waiting, holderOfB, handedAt: performance.now() };
  }

  /** Whether another locker finds `resource` free (and frees it again). */
  async function isFree(resource: string): Promise<boolean> {
    const lock = await locker({ nodes: fixture().redis.urls }).tryAcquire(resource, {
      ttlMs: 1_000,
    });
    await lock?.release();
    return lock !== null;
  }

  it('from its second round, waits for a later resource holding the earlier ones', async () => {
    const { waiting, holderOfB, handedAt } = await secondRoundWaitingForB(4_000, 8_000);
    await delay(200);
    // It waits in b's line and keeps 'a': giving it back would let callers that keep handing
    // each other the two resources (fair lines) go round for ever.
    expect(await isFree('a')).toBe(false);
    await delay(handedAt + 1_500 - performance.now());
    const releasedAt = performance.now();
    await holderOfB.release();
    const both = await waiting;
    expect(performance.now() - releasedAt).toBeLessThan(1_000); // handed over, no new round
    // 'a', kept 1.5 s of its 4 s, was renewed once the group was complete (about 2.5 s left
    // otherwise).
    expect(both.remainingMs()).toBeGreaterThan(3_300);
    expect(await both.release()).toBe('released');
  });

  it('gives the earlier resources back once they are down to half their TTL', async () => {
    const { waiting, holderOfB, handedAt } = await secondRoundWaitingForB(2_000, 8_000);
    await delay(300);
    expect(await isFree('a')).toBe(false);
    // 'a' (2 s) may be kept while it has more than 1 s left: about 1 s from the hand-over.
    await delay(handedAt + 1_600 - performance.now());
    expect(await isFree('a')).toBe(true);
    await holderOfB.release();
    expect(await (await waiting).release()).toBe('released');
  });

  it('gives up a wait that holds earlier resources at waitMs, and holds nothing', async () => {
    const { waiting, holderOfB } = await secondRoundWaitingForB(10_000, 1_000);
    const error = await waiting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AcquireTimeoutError);
    expect((error as AcquireTimeoutError).resource).toBe('b');
    expect(await lockedOn(['a'])).toEqual([0, 0, 0, 0, 0]);
    await holderOfB.release();
  });

  it('never waits for an earlier resource while it holds a later one', async () => {
    const { urls } = fixture().redis;
    const holderOfB = await locker().acquire('b', { ttlMs: 10_000 });
    const waiting = locker({ retryDelayMs: 100 }).acquireAll(['a', 'b'], {
      ttlMs: 10_000,
      waitMs: 8_000,
    });
    await delay(200); // in b's line, holding nothing
    const holderOfA = await locker().acquire('a', { ttlMs: 10_000 });
    await holderOfB.release(); // 'b' is handed over; 'a' is busy: it gives 'b' back
    await delay(300);
    const b = await locker({ nodes: urls }).tryAcquire('b', { ttlMs: 1_000 });
    expect(b).not.toBeNull();
    await b?.release();
    await holderOfA.release();
    expect(await (await waiting).release()).toBe('released');
  });

  it('never deadlocks: two callers asking in opposite orders both finish, never at once', async () => {
    const l1 = locker({ retryDelayMs: 10 });
    const l2 = locker({ retryDelayMs: 10 });
    let inside = 0;
    let overlaps = 0;
    const worker = async (l: typeof l1, resources: string[]) => {
      for (let i = 0; i < 15; i++) {
        const all = await l.acquireAll(resources, { ttlMs: 5_000, waitMs: 10_000 });
        if (++inside > 1) overlaps++;
        await delay(5);
        inside--;
        await all.release();
      }
    };
    await Promise.all([worker(l1, ['x', 'y']), worker(l2, ['y', 'x'])]);
    expect(overlaps).toBe(0);
    expect(await lockedOn(['x', 'y'])).toEqual([0, 0, 0, 0, 0]);
  });

  it('gives up after waitMs with the resource that stayed busy, and holds nothing', async () => {
    const holder = await locker().acquire('b', { ttlMs: 10_000 });
    const started = performance.now();
    const error = await locker()
      .acquireAll(['a', 'b'], { ttlMs: 5_000, waitMs: 300 })
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(error).toBeInstanceOf(AcquireTimeoutError);
    expect((error as AcquireTimeoutError).resource).toBe('b');
    // The call's whole wait and its rounds, not those of its last take of 'b'.
    expect((error as AcquireTimeoutError).waitedMs).toBeGreaterThan(250);
    expect((error as AcquireTimeoutError).attempts).toBe(1);
    expect(await lockedOn(['a'])).toEqual([0, 0, 0, 0, 0]);
    await holder.release();
  });

  it('gives back what a round took at once under minHoldMs, and keeps the group for it', async () => {
    const holder = await locker().acquire('b', { ttlMs: 10_000 });
    const options = { ttlMs: 10_000, minHoldMs: 5_000, waitMs: 3_000 };
    const waiting = locker().acquireAll(['a', 'b'], options);
    await delay(300);
    expect(await lockedOn(['a'])).toEqual([0, 0, 0, 0, 0]); // a give-back is no hold
    await holder.release();
    const both = await waiting; // its own keys no longer block it
    const releasedAt = performance.now();
    expect(await both.release()).toBe('released');
    const keptMs = await Promise.all(
      fixture().admin.flatMap((a) => [a.pttl('distlock:{a}'), a.pttl('distlock:{b}')]),
    );
    const elapsed = performance.now() - releasedAt;
    for (const ms of keptMs) {
      expect(ms).toBeGreaterThan(options.minHoldMs - elapsed - 1_000); // kept, not deleted
      expect(ms).toBeLessThanOrEqual(options.minHoldMs);
    }
  });

  it('keeps the group for minHoldMs when its locker closes, too', async () => {
    const l = locker();
    await l.acquireAll(['a', 'b'], { ttlMs: 10_000, minHoldMs: 5_000 });
    const closedAt = performance.now();
    await l.close();
    const keptMs = await Promise.all(
      fixture().admin.flatMap((a) => [a.pttl('distlock:{a}'), a.pttl('distlock:{b}')]),
    );
    const elapsed = performance.now() - closedAt;
    for (const ms of keptMs) expect(ms).toBeGreaterThan(5_000 - elapsed - 1_000);
  });

  it('holds nothing after giving up under minHoldMs', async () => {
    const holder = await locker().acquire('b', { ttlMs: 10_000 });
    const error = await locker()
      .acquireAll(['a', 'b'], { ttlMs: 5_000, minHoldMs: 4_000, waitMs: 300 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AcquireTimeoutError);
    expect(await lockedOn(['a'])).toEqual([0, 0, 0, 0, 0]);
    await holder.release();
  });

  it('fires its signal when any of its locks is lost, and gives each its fence', async () => {
    const all = await locker().acquireAll(['a', 'b'], { ttlMs: 300, fencing: true });
    expect([...all.fences.keys()]).toEqual(['a', 'b']);
    await Promise.all(fixture().admin.map((a) => a.del('distlock:{a}'))); // only a is lost
    await expect(all.extend(5_000)).rejects.toBeInstanceOf(LockLostError);
    expect(all.signal.aborted).toBe(true);
    await delay(350);
    expect(all.signal.aborted).toBe(true);
    expect(all.signal.reason).toBeInstanceOf(LockLostError);
    expect(all.remainingMs()).toBe(0);
    expect(await all.release()).toBe('not-held');
  });

  it('reads as aborted past its deadline even before its timers ran', async () => {
    const all = await locker().acquireAll(['a', 'b'], { ttlMs: 200 });
    const until = performance.now() + 250;
    while (performance.now() < until); // the event loop is blocked past the deadline
    expect(all.signal.aborted).toBe(true);
    expect(all.signal.reason).toBeInstanceOf(LockLostError);
  });

  it('keeps locking with one of 5 nodes paused and another killed', async () => {
    const { nodes } = fixture().redis;
    nodes[0]?.pause();
    await nodes[1]?.kill();
    const all = await locker().acquireAll(['a', 'b', 'c'], { ttlMs: 5_000, waitMs: 0 });
    expect(all.remainingMs()).toBeGreaterThan(3_000); // the first operation opens connections
    expect(await all.release()).toBe('released');
  });

  it('waits out nodes that fail for a moment, as acquire does', async () => {
    const { nodes } = fixture().redis;
    const l = locker();
    await (await l.acquireAll(['a', 'b'], { ttlMs: 5_000 })).release(); // connections open
    for (const node of nodes.slice(0, 3)) node.pause(); // no majority
    setTimeout(() => {
      for (const node of nodes.slice(0, 3)) node.resume();
    }, 300);
    // Before: NoQuorumError at once, with nearly all of waitMs left.
    const all = await l.acquireAll(['a', 'b'], { ttlMs: 5_000, waitMs: 3_000 });
    expect(await all.release()).toBe('released');
  });

  it('rejects bad arguments before any I/O, naming the field', () => {
    const l = locker();
    expect(() => l.acquireAll([], { ttlMs: 1_000 })).toThrow(InvalidArgumentError);
    expect(() => l.acquireAll(['a', ''], { ttlMs: 1_000 })).toThrow(
      expect.objectContaining({ field: 'resources[1]' }),
    );
    expect(() => l.acquireAll(['a', 'a'], { ttlMs: 1_000 })).toThrow(
      expect.objectContaining({ field: 'resources' }),
    );
    expect(() => l.acquireAll(['a'], { ttlMs: -1 })).toThrow(
      expect.objectContaining({ field: 'ttlMs' }),
    );
  });
});

describe('acquireAll failing part-way', () => {
  // Each case fails once "a" and "b" are taken, while "c" is being taken, with a TTL far
  // longer than the test: the keys of "a" and "b" must be gone from every node as soon as
  // acquireAll rejects, not left to expire.
  const TTL_MS = 60_000;
  const taken = ['a', 'b'];

  /** Runs `stop` once "b" is taken (the `acquired` event of its lock). */
  const onceTaken = (l: Locker, stop: () => void) =>
    l.events.on('acquired', ({ resource }) => {
      if (resource === 'b') stop();
    });

  it('gives back what it took at once when aborted', async () => {
    const l = locker();
    const controller = new AbortController();
    onceTaken(l, () => controller.abort(new Error('stop')));
    const error = await l
      .acquireAll(['a', 'b', 'c'], { ttlMs: TTL_MS, waitMs: 10_000, signal: controller.signal })
      .catch((e) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect(await lockedOn(taken)).toEqual([0, 0, 0, 0, 0]);
  });

  it('gives back what it took before rejecting when its locker closes', async () => {
    const l = locker();
    let closing: Promise<void> | undefined;
    onceTaken(l, () => {
      closing = l.close();
    });
    const error = await l
      .acquireAll(['a', 'b', 'c'], { ttlMs: TTL_MS, waitMs: 10_000 })
      .catch((e) => e);
    expect(error).toBeInstanceOf(LockerClosedError);
    // Before: rejected while the close's deletes were still on their way ([2, 2, 2, 2, 2]).
    expect(await lockedOn(taken)).toEqual([0, 0, 0, 0, 0]);
    await closing;
  });

  it('gives back what it took at once when a node refuses the third (NOPERM)', async () => {
    const { admin, redis } = fixture();
    // A user who may touch the keys of "a" and "b" only.
    const rules = [
      ...['reset', 'on', '>pw', '~distlock:{a}*', '~distlock:{b}*'],
      ...['~distlock:longest-lease', '&*', '+@all'], // the lease record: every node has one
    ];
    await Promise.all(admin.map((a) => a.call('ACL', 'SETUSER', 'ab', ...rules)));
    const urls = redis.nodes.map((node) => `redis://ab:pw@127.0.0.1:${node.port}`);
    const error = await locker({ nodes: urls })
      .acquireAll(['a', 'b', 'c'], { ttlMs: TTL_MS, waitMs: 10_000 })
      .catch((e) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as NoQuorumError).resource).toBe('c');
    expect((error as Error).message).toMatch(/NOPERM/);
    expect(await lockedOn(taken)).toEqual([0, 0, 0, 0, 0]);
  });

  it('gives back what it took at once when the third fails (a key of the wrong type)', async () => {
    // Its fence counter is a list: every node answers WRONGTYPE.
    await Promise.all(fixture().admin.map((a) => a.lpush('distlock:{c}:fence', 'x')));
    const error = await locker()
      .acquireAll(['a', 'b', 'c'], { ttlMs: TTL_MS, waitMs: 0, fencing: true })
      .catch((e) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as Error).message).toMatch(/WRONGTYPE/);
    expect(await lockedOn(taken)).toEqual([0, 0, 0, 0, 0]);
  });
});
