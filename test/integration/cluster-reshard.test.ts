import { setTimeout as delay } from 'node:timers/promises';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortedError,
  fencedPeek,
  fencedReadForUpdate,
  fencedWrite,
  Locker,
  type RedisClient,
} from '../../src/index.js';
import { queueKeys } from '../../src/keys.js';
import {
  type RedisCluster,
  type RedisServer,
  type SlotMove,
  startRedisCluster,
} from '../../src/testing/index.js';
import { type ClusterClientKind, clusterClientKinds } from '../support/cluster-clients.js';

/**
 * A reshard under a held lock, on a real Cluster, through every Cluster client distlock
 * supports: the lock's slot is moved to another master (`MOVED` from then on), or left
 * half-migrated (`ASK` for keys already moved, `TRYAGAIN` for a script whose keys are not all
 * on one side). Extending, releasing, leaving the line and the fenced reads and writes must
 * follow the slot within the per-node timeout: they have no next attempt.
 */
let cluster: RedisCluster;
const lockers: Locker[] = [];
/** Moves a test left half-way, finished after it so that the next test sees a stable cluster. */
const moves: SlotMove[] = [];

/** The per-node timeout of every locker here: each command has that long, follows included. */
const NODE_TIMEOUT_MS = 1_000;
/** A lease the next holder would wait for in full if a release were lost. */
const TTL_MS = 20_000;
/** The longest valkey-glide retries one command of distlock's own client (its requestTimeout). */
const GLIDE_REQUEST_TIMEOUT_MS = 250;

const clients = clusterClientKinds(() => cluster);
const KINDS = clients.kinds;

beforeAll(async () => {
  cluster = await startRedisCluster({ replicasPerMaster: 0 });
});
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  await clients.close();
  for (const move of moves.splice(0)) await move.finish();
});
afterAll(async () => {
  await cluster?.stop();
});

function lockerOn(
  client: RedisClient,
  options: { retryDelayMs?: number; nodeTimeoutMs?: number } = {},
): Locker {
  const locker = new Locker({ nodes: [client], nodeTimeoutMs: NODE_TIMEOUT_MS, ...options });
  lockers.push(locker);
  return locker;
}

/** The lock key of `resource`. */
function keyOf(resource: string): string {
  return `distlock:{${resource}}`;
}

/** A master other than the one serving `key`: where its slot goes. */
async function otherMaster(key: string): Promise<RedisServer> {
  const owner = await cluster.masterOf(key);
  const other = (await cluster.masters()).find((master) => master !== owner);
  if (!other) throw new Error('too few masters');
  return other;
}

/** Runs `commands` on `node` over a connection of its own. */
async function on(node: RedisServer, ...commands: (string | number)[][]): Promise<unknown[]> {
  const admin = new Redis(node.port, '127.0.0.1');
  try {
    return await Promise.all(commands.map(([name, ...args]) => admin.call(String(name), ...args)));
  } finally {
    admin.disconnect();
  }
}

/** How many `TRYAGAIN` replies `nodes` gave so far (`INFO errorstats`). */
async function tryAgains(nodes: readonly RedisServer[]): Promise<number> {
  let count = 0;
  for (const node of nodes) {
    const [stats] = await on(node, ['INFO', 'errorstats']);
    count += Number(/^errorstat_TRYAGAIN:count=(\d+)/m.exec(String(stats))?.[1] ?? 0);
  }
  return count;
}

/** Resolves once `nodes` gave more `TRYAGAIN` replies than `before`. */
async function tryAgainSeen(nodes: readonly RedisServer[], before: number): Promise<void> {
  while ((await tryAgains(nodes)) <= before) await delay(5);
}

/** A resource name of one client kind and case: no two cases share a slot's keys. */
function nameOf(kind: ClusterClientKind, name: string): string {
  return `${kind.name.replace(/\W+/g, '-')}-${name}`;
}

describe.each(KINDS)('a reshard under a held lock, through $name', (kind) => {
  it('the slot moved: extend and release follow MOVED, the next client locks at once', async () => {
    const client = await kind.open();
    const resource = nameOf(kind, 'moved');
    const key = keyOf(resource);
    const [holder, next] = [lockerOn(client), lockerOn(client)];
    await (await next.acquire(`${resource}-warm-up`, { ttlMs: TTL_MS })).release();
    const lock = await holder.acquire(resource, { ttlMs: TTL_MS });
    const to = await otherMaster(key);
    await cluster.moveSlot(calculateSlot(key), to);

    await lock.extend(2 * TTL_MS); // longer than the first lease: seen on the new master
    const [pttl] = await on(to, ['PTTL', key]);
    expect(pttl).toBeGreaterThan(TTL_MS);
    expect(await lock.release()).toBe('released');
    expect(await on(to, ['EXISTS', key])).toEqual([0]);
    // Its slot table is as old as the holder's: its first attempt follows MOVED too.
    const started = performance.now();
    const again = await next.acquire(resource, { ttlMs: TTL_MS, waitMs: 0 });
    expect(performance.now() - started).toBeLessThan(NODE_TIMEOUT_MS);
    expect(await again.release()).toBe('released');
  });

  it('half-migrated: extend follows ASK, release retries TRYAGAIN until the slot moved (valkey-glide: fails)', async () => {
    const client = await kind.open();
    const resource = nameOf(kind, 'asked');
    const key = keyOf(resource);
    const lock = await lockerOn(client).acquire(resource, { ttlMs: TTL_MS });
    const move = await cluster.beginSlotMove(calculateSlot(key), await otherMaster(key));
    moves.push(move);
    expect(await move.moveKeys()).toBe(1); // the lock key: the source now answers ASK

    await lock.extend(2 * TTL_MS);
    const [, pttl] = await on(move.to, ['ASKING'], ['PTTL', key]); // the slot is not its yet
    expect(pttl).toBeGreaterThan(TTL_MS);
    // The release script also names the line's keys, which exist nowhere: Redis cannot tell
    // them from keys not moved yet, and answers TRYAGAIN until the slot has moved.
    const before = await tryAgains([move.from, move.to]);
    const releasing = lock.release();
    await Promise.race([tryAgainSeen([move.from, move.to], before), releasing]);
    if (!kind.retriesTryAgain) {
      // The limit: the release fails, and the key stays on the new master until its TTL.
      expect(await releasing).toBe('failed');
      await move.finish();
      expect(await on(move.to, ['EXISTS', key])).toEqual([1]);
      return;
    }
    await move.finish();
    expect(await releasing).toBe('released');
    expect(await on(move.to, ['EXISTS', key])).toEqual([0]);
  });

  it('a release that cannot finish within the node timeout fails, and never runs later', async () => {
    const client = await kind.open();
    const resource = nameOf(kind, 'late');
    const key = keyOf(resource);
    const nodeTimeoutMs = GLIDE_REQUEST_TIMEOUT_MS / 5; // shorter than any library's retries
    const lock = await lockerOn(client, { nodeTimeoutMs }).acquire(resource, { ttlMs: TTL_MS });
    const move = await cluster.beginSlotMove(calculateSlot(key), await otherMaster(key));
    moves.push(move);
    await move.moveKeys(); // the release gets ASK, then TRYAGAIN on the target, until finish()

    const started = performance.now();
    expect(await lock.release()).toBe('failed');
    await move.finish(); // from now on the release would run if anything sent it again
    await delay(Math.max(0, started + 2 * GLIDE_REQUEST_TIMEOUT_MS - performance.now()));
    // Reported as failed, so it must not delete the key behind the caller's back: a command
    // sent after its timeout is how a late SET NX takes a lock that nobody holds.
    expect(await on(move.to, ['EXISTS', key])).toEqual([1]);
  });

  it('half-migrated with a waiter in line: the release follows ASK and hands the lock over', async () => {
    const client = await kind.open();
    const resource = nameOf(kind, 'handed');
    const key = keyOf(resource);
    const holder = await lockerOn(client).acquire(resource, { ttlMs: TTL_MS });
    const waiting = lockerOn(client).acquire(resource, {
      ttlMs: TTL_MS,
      waitMs: TTL_MS,
      fair: true,
    });
    const from = await cluster.masterOf(key);
    while ((await on(from, ['ZCARD', queueKeys(key).queue]))[0] !== 1) await delay(5);
    const move = await cluster.beginSlotMove(calculateSlot(key), await otherMaster(key));
    moves.push(move);
    // The lock key and the line's: every key the release names is on the target.
    expect(await move.moveKeys()).toBeGreaterThanOrEqual(4);

    expect(await holder.release()).toBe('released');
    // The waiter's own attempt names line keys that are gone now (it was the only one).
    await move.finish();
    const next = await waiting;
    expect(await next.release()).toBe('released');
  });

  it('a waiter that gives up after the slot moved leaves the line on the new master', async () => {
    const client = await kind.open();
    const resource = nameOf(kind, 'left');
    const key = keyOf(resource);
    const holder = await lockerOn(client).acquire(resource, { ttlMs: TTL_MS });
    const waiter = lockerOn(client, { retryDelayMs: 5_000 });
    const pausing = new Promise((resolve) =>
      waiter.events.on('retry', ({ delayMs }) => delayMs > 0 && resolve(delayMs)),
    );
    const stop = new AbortController();
    const waiting = waiter
      .acquire(resource, { ttlMs: TTL_MS, waitMs: TTL_MS, fair: true, signal: stop.signal })
      .catch((error: unknown) => error);
    await pausing; // in line, and asleep for seconds: its slot table will be out of date
    const to = await otherMaster(key);
    await cluster.moveSlot(calculateSlot(key), to);

    stop.abort();
    expect(await waiting).toBeInstanceOf(AbortedError);
    expect(await on(to, ['ZCARD', queueKeys(key).queue])).toEqual([0]);
    // Nobody to hand the lock to: the release deletes it, and the next client locks at once.
    expect(await holder.release()).toBe('released');
    expect(await on(to, ['EXISTS', key])).toEqual([0]);
    const again = await lockerOn(client).acquire(resource, { ttlMs: TTL_MS, waitMs: 0 });
    expect(await again.release()).toBe('released');
  });

  it('fenced reads and writes follow ASK and MOVED, whatever the caller client follows', async () => {
    const client = await kind.open({ follows: false });
    const resource = nameOf(kind, 'fenced');
    const data = `${resource}:data`;
    const lock = await lockerOn(client).acquire(resource, { ttlMs: TTL_MS, fencing: true });
    const fence = lock.fence ?? 0n;
    expect(await fencedWrite(client, data, fence, 'before')).toBe('applied');
    const move = await cluster.beginSlotMove(calculateSlot(data), await otherMaster(data));
    moves.push(move);
    expect(await move.moveKeys()).toBe(1);

    expect(await fencedReadForUpdate(client, data, fence)).toEqual({ value: 'before' });
    expect(await fencedWrite(client, data, fence, 'asked')).toBe('applied');
    expect(await fencedPeek(client, data)).toEqual({ value: 'asked', fence });
    await move.finish();
    expect(await fencedReadForUpdate(client, data, fence)).toEqual({ value: 'asked' });
    expect(await fencedWrite(client, data, fence, 'moved')).toBe('applied');
    expect(await fencedPeek(client, data)).toEqual({ value: 'moved', fence });
    expect(await on(move.to, ['HGET', data, 'value'])).toEqual(['moved']);
    expect(await lock.release()).toBe('released');
  });
});
