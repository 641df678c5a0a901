import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisServer, startRedis } from '../../src/testing/index.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function ping(url: string, timeoutMs = 300): Promise<string> {
  const client = new Redis(url, { maxRetriesPerRequest: 0, commandTimeout: timeoutMs });
  client.on('error', () => {});
  try {
    return await client.ping();
  } catch (error) {
    return (error as Error).message;
  } finally {
    client.disconnect();
  }
}

describe('distlock/testing', () => {
  it('starts nodes that pause, resume, restart empty and stop without leftovers', async () => {
    const redis = await startRedis({ nodes: 2 });
    const [a, b] = redis.nodes as [RedisServer, RedisServer];
    expect(a.port).not.toBe(b.port);
    expect(await ping(a.url)).toBe('PONG');

    a.pause();
    expect(await ping(a.url)).toMatch(/timed out/i);
    a.resume();
    expect(await ping(a.url)).toBe('PONG');

    const client = new Redis(b.url);
    await client.set('k', 'v');
    const before = b.pid;
    await b.restart();
    expect(b.pid).not.toBe(before);
    expect(alive(before as number)).toBe(false);
    await new Promise((resolve) => client.once('ready', resolve));
    expect(await client.get('k')).toBeNull();
    client.disconnect();

    const pids = redis.nodes.map((n) => n.pid as number);
    const dirs = redis.nodes.map((n) => n.dir);
    await redis.stop();
    expect(pids.filter(alive)).toEqual([]);
    expect(dirs.filter(existsSync)).toEqual([]);
    expect(redis.nodes.every((n) => !n.running)).toBe(true);
  });

  it('kills a paused node', async () => {
    const redis = await startRedis();
    const node = redis.nodes[0] as RedisServer;
    const pid = node.pid as number;
    node.pause();
    await node.kill();
    expect(alive(pid)).toBe(false);
    await redis.stop();
  });

  it('says how to install redis-server when it is missing', async () => {
    const error = await RedisServer.start({ binary: '/nonexistent/redis-server' }).catch(
      (e: unknown) => e,
    );
    expect(String(error)).toContain('apt-get install -y redis-server');
  });
});
