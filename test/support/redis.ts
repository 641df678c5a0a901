import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { Locker, type LockerOptions } from '../../src/index.js';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';
import { type ClockedRedis, startClockedRedis } from '../simulation/clocked-redis.js';

/** Real redis-server nodes for one test file, plus a plain admin client per node. */
export interface RedisFixture {
  readonly redis: RedisNodes;
  readonly admin: readonly Redis[];
}

/**
 * Starts `count` nodes before the file's tests and stops them after. Before every test each
 * node is emptied and its script cache flushed: no test depends on scripts an earlier one
 * loaded.
 */
export function useRedis(count: number): () => RedisFixture {
  let fixture: RedisFixture | undefined;
  beforeAll(async () => {
    const redis = await startRedis({ nodes: count });
    const admin = redis.urls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
    for (const client of admin) client.on('error', () => {});
    fixture = { redis, admin };
  });
  beforeEach(async () => {
    for (const [index, node] of (fixture?.redis.nodes ?? []).entries()) {
      if (node.paused) node.resume();
      if (!node.running) await node.restart();
      const client = fixture?.admin[index];
      await client?.flushall();
      await client?.script('FLUSH');
    }
  });
  afterAll(async () => {
    for (const client of fixture?.admin ?? []) client.disconnect();
    await fixture?.redis.stop();
  });
  return () => {
    if (!fixture) throw new Error('useRedis: fixture used outside a test');
    return fixture;
  };
}

/**
 * Returns a factory of lockers on the fixture's nodes (or on `urls()`); every locker it made
 * is closed after each test.
 */
export function useLockers(
  fixture: () => RedisFixture,
  urls: () => readonly string[] = () => fixture().redis.urls,
): (options?: Partial<LockerOptions>) => Locker {
  const made: Locker[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((locker) => locker.close()));
  });
  return (options = {}) => {
    const locker = new Locker({ nodes: urls(), ...options });
    made.push(locker);
    return locker;
  };
}

/**
 * The node's lease record (`engine/lease-records.ts`), which every locker on two nodes or
 * more writes and never deletes: not a lock's key, so not a key left behind.
 */
export const LEASE_RECORD_KEY = 'distlock:longest-lease';

/** The keys matching `pattern` on a node, but for its lease record. */
export async function keysLeft(client: Redis, pattern = 'distlock:*'): Promise<string[]> {
  return (await client.keys(pattern)).filter((key) => key !== LEASE_RECORD_KEY);
}

/** A redis-server whose wall clock stands still, and its admin client. */
export interface ClockedFixture {
  readonly admin: Redis;
  readonly port: number;
}

/**
 * Starts one clocked redis-server (test/simulation/clocked-redis.ts) before the file's tests,
 * its clock standing still at the file's start, and stops it after; before every test it is
 * emptied. What lives by the server's clock (expiry, a barging turn's window) never passes.
 */
export function useClockedRedis(): () => ClockedFixture {
  let fixture: ClockedFixture | undefined;
  let clocked: ClockedRedis | undefined;
  beforeAll(async () => {
    clocked = await startClockedRedis(BigInt(Date.now()) * 1_000n);
    const admin = new Redis(clocked.server.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => {});
    fixture = { admin, port: clocked.server.port };
  });
  beforeEach(async () => {
    await fixture?.admin.flushall();
    await fixture?.admin.script('FLUSH');
  });
  afterAll(async () => {
    fixture?.admin.disconnect();
    await clocked?.stop();
  });
  return () => {
    if (!fixture) throw new Error('useClockedRedis: fixture used outside a test');
    return fixture;
  };
}
