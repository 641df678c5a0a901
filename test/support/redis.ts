import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';

/** Real redis-server nodes for one test file, plus a plain admin client per node. */
export interface RedisFixture {
  readonly redis: RedisNodes;
  readonly admin: readonly Redis[];
}

/**
 * Starts `count` nodes before the file's tests and stops them after. Before every test each
 * node is emptied and its script cache flushed, so the NOSCRIPT -> EVAL path always runs.
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
