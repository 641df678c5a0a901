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

/** A redis-server whose wall clock stands still unless a test moves it, and its admin client. */
export interface ClockedFixture {
  readonly admin: Redis;
  readonly url: string;
  readonly port: number;
  /** The server's clock (ms since the epoch). */
  readonly nowMs: number;
  /** Sets the server's clock to `ms` since the epoch. */
  setClockMs(ms: number): void;
}

/**
 * Starts one clocked redis-server (test/simulation/clocked-redis.ts) before the file's tests,
 * its clock standing at the file's start, and stops it after; before every test it is emptied
 * and its clock put back. What lives by the server's clock (expiry, a barging turn's window)
 * then passes only when a test moves the clock.
 */
export function useClockedRedis(): () => ClockedFixture {
  const startMs = Date.now();
  let fixture: ClockedFixture | undefined;
  let clocked: ClockedRedis | undefined;
  beforeAll(async () => {
    const server = await startClockedRedis(BigInt(startMs) * 1_000n);
    clocked = server;
    const admin = new Redis(server.server.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => {});
    let nowMs = startMs;
    fixture = {
      admin,
      url: server.server.url,
      port: server.server.port,
      get nowMs() {
        return nowMs;
      },
      setClockMs(ms) {
        nowMs = ms;
        server.setClock(BigInt(ms) * 1_000n);
      },
    };
  });
  beforeEach(async () => {
    fixture?.setClockMs(startMs);
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
