import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import {
  type RedisSentinelGroup,
  type RedisServer,
  startRedisSentinel,
} from '../../src/testing/index.js';
import { isRunning } from '../support/processes.js';

function sentinelClient(group: RedisSentinelGroup): Redis {
  const client = new Redis({ sentinels: [...group.sentinelAddresses], name: group.masterName });
  client.on('error', () => {}); // reconnects during a failover are expected
  return client;
}

async function read(node: RedisServer, key: string): Promise<string | null> {
  const client = new Redis(node.url, { maxRetriesPerRequest: 0 });
  try {
    return await client.get(key);
  } finally {
    client.disconnect();
  }
}

describe('distlock/testing: Redis Sentinel', () => {
  it('starts a healthy group that a Sentinel client writes to', async () => {
    await using group = await startRedisSentinel();
    expect(group.servers).toHaveLength(2);
    expect(group.sentinels).toHaveLength(3);
    const [first, replica] = group.servers as [RedisServer, RedisServer];
    expect(await group.master()).toBe(first);
    expect(await group.replicas()).toEqual([replica]);

    const client = sentinelClient(group);
    try {
      await client.set('k', 'v');
      expect(await client.get('k')).toBe('v');
      expect(await read(first, 'k')).toBe('v');
      // The replica gets writes from the moment the group is healthy, not a second later.
      expect(await client.wait(1, 200)).toBe(1);
      expect(await read(replica, 'k')).toBe('v');
    } finally {
      client.disconnect();
    }
  });

  it('fails over on demand, and the Sentinel client follows the new master', async () => {
    await using group = await startRedisSentinel();
    const [first, replica] = group.servers as [RedisServer, RedisServer];
    const client = sentinelClient(group);
    try {
      await client.set('before', '1');
      expect(await client.wait(1, 1000)).toBe(1);
      const promoted = await group.failover();
      expect(promoted).toBe(replica);
      expect(await group.master()).toBe(replica);
      expect(await group.replicas()).toEqual([first]);

      await client.set('after', '2');
      expect(await read(replica, 'after')).toBe('2');
      expect(await read(replica, 'before')).toBe('1');
      expect(await group.failover()).toBe(first); // and back at once
      await client.set('back', '3');
      expect(await read(first, 'back')).toBe('3');
    } finally {
      client.disconnect();
    }
  });

  it('replaces a SIGKILLed master within a few seconds, and takes it back as a replica', async () => {
    await using group = await startRedisSentinel();
    const [first, replica] = group.servers as [RedisServer, RedisServer];
    const client = sentinelClient(group);
    try {
      await client.set('before', '1');
      expect(await client.wait(1, 1000)).toBe(1);
      const killedAt = Date.now();
      await first.kill();
      await vi.waitFor(async () => expect(await group.master()).toBe(replica), {
        timeout: 10_000,
        interval: 50,
      });
      expect(Date.now() - killedAt).toBeLessThan(8_000);

      await client.set('after', '2');
      expect(await read(replica, 'after')).toBe('2');
      await group.waitUntilHealthy();

      await first.restart(); // empty, and a master again until the sentinels convert it
      await group.waitUntilHealthy();
      expect(await group.replicas()).toEqual([first]);
      expect(await read(first, 'after')).toBe('2');
    } finally {
      client.disconnect();
    }
  });

  it('stops every process and removes every temp dir, twice without harm', async () => {
    const group = await startRedisSentinel({ replicas: 2, sentinels: 1 });
    const nodes = [...group.servers, ...group.sentinels];
    const pids = nodes.map((node) => node.pid as number);
    expect(pids.every(isRunning)).toBe(true);
    await group.stop();
    await group.stop();
    expect(pids.filter(isRunning)).toEqual([]);
    expect(nodes.map((node) => node.dir).filter(existsSync)).toEqual([]);
  });

  it('rejects a quorum larger than the sentinels', async () => {
    await expect(startRedisSentinel({ sentinels: 3, quorum: 4 })).rejects.toThrow(
      'Expected `quorum` to be an integer from 1 to 3, got `4` (number)',
    );
  });
});
