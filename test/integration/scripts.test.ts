import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { IORedisConnection } from '../../src/driver/ioredis.js';
import { acquireFairScript } from '../../src/scripts/acquire-fair.js';
import { acquireFencedScript } from '../../src/scripts/acquire-fenced.js';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(1);

describe('acquisition scripts, when an earlier attempt with the same token already landed', () => {
  it('acquire-fenced renews the TTL the new attempt counts on', async () => {
    const admin = fixture().admin[0] as Redis;
    await admin.set('k', 'tok', 'PX', 300);
    await delay(200);
    const node = new IORedisConnection(admin);
    const reply = await acquireFencedScript.run(
      node,
      { key: 'k', token: 'tok', ttlMs: 10_000 },
      1_000,
    );
    expect(reply.state).toBe(0);
    expect(await admin.pttl('k')).toBeGreaterThan(9_000);
  });

  it('acquire-fair renews the TTL and leaves the line', async () => {
    const admin = fixture().admin[0] as Redis;
    await admin.set('k', 'tok', 'PX', 300);
    await delay(200);
    const node = new IORedisConnection(admin);
    // KEYS: k, k:queue, k:queue-deadlines, k:fence; channel k:released.
    const acquisition = { key: 'k', token: 'tok', ttlMs: 10_000, fencing: false };
    const fair = { ticket: 1, waiterTimeoutMs: 1_000 };
    const reply = await acquireFairScript.run(node, { ...acquisition, fair }, 1_000);
    expect(reply.state).toBe(0);
    expect(await admin.pttl('k')).toBeGreaterThan(9_000);
    expect(await admin.zcard('k:queue')).toBe(0);
    expect(await admin.zcard('k:queue-deadlines')).toBe(0);
  });
});
