import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError, LockBusyError, Locker, NoQuorumError } from '../../src/index.js';
import {
  type RedisSentinelGroup,
  type RedisServer,
  startRedisSentinel,
} from '../../src/testing/index.js';

let group: RedisSentinelGroup;
const clients: Redis[] = [];
const lockers: Locker[] = [];

beforeAll(async () => {
  group = await startRedisSentinel({ masterName: 'orders' });
});
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  for (const client of clients.splice(0)) client.disconnect();
  for (const server of group.servers) {
    if (server.paused) server.resume();
    if (!server.running) await server.restart();
  }
  await group.waitUntilHealthy();
});
afterAll(async () => {
  await group?.stop();
});

/** A caller's client in Sentinel mode for `of`, disconnected after the test. */
function sentinelClient(of: RedisSentinelGroup = group): Redis {
  const client = new Redis({ sentinels: [...of.sentinelAddresses], name: of.masterName });
  client.on('error', () => {}); // reconnects during a failover are expected
  clients.push(client);
  return client;
}

function lockerOn(nodes: Redis[], replicaAcks = 0): Locker {
  // Room for a WAIT that times out: Redis answers it on its next tick, up to 100 ms late.
  const locker = new Locker({ nodes, replicaAcks, nodeTimeoutMs: 400 });
  lockers.push(locker);
  return locker;
}

async function exists(server: RedisServer, key: string): Promise<number> {
  const client = new Redis(server.url, { maxRetriesPerRequest: 0 });
  try {
    return await client.exists(key);
  } finally {
    client.disconnect();
  }
}

describe('Sentinel groups as lock nodes', () => {
  it('are named by master name and sentinels; one group listed twice is refused', async () => {
    const locker = lockerOn([sentinelClient()]);
    expect(locker.nodes[0]).toMatch(/^sentinel orders \(127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,/);
    expect(() => new Locker({ nodes: [sentinelClient(), sentinelClient()] })).toThrow(
      InvalidArgumentError,
    );
    await using other = await startRedisSentinel({ masterName: 'orders', sentinels: 1 });
    const redlock = lockerOn([sentinelClient(), sentinelClient(other)]);
    const lock = await redlock.acquire('r', { ttlMs: 5_000 });
    expect(await lock.release()).toBe('released');
  });

  it('keep a held lock through a SENTINEL FAILOVER: the new master has it and the release reaches it', async () => {
    const holder = await lockerOn([sentinelClient()], 1).acquire('r', { ttlMs: 30_000 });
    const promoted = await group.failover();
    expect(await exists(promoted, 'distlock:{r}')).toBe(1);
    const rival = lockerOn([sentinelClient()], 1);
    await expect(rival.acquire('r', { ttlMs: 5_000, waitMs: 0 })).rejects.toThrow(LockBusyError);
    expect(await holder.release()).toBe('released');
    expect(await exists(promoted, 'distlock:{r}')).toBe(0);
  }, 30_000);

  it('refuse a vote that no replica confirmed; without replicaAcks a failover loses the lock', async () => {
    const master = await group.master();
    const [replica] = await group.replicas();
    if (!replica) throw new Error('no replica');
    // From now on writes reach only the master: the replica is stopped and its link cut.
    replica.pause();
    const admin = new Redis(master.url);
    await admin.client('KILL', 'TYPE', 'replica');
    admin.disconnect();
    const error = await lockerOn([sentinelClient()], 1)
      .acquire('r', { ttlMs: 30_000, waitMs: 0 })
      .catch((e) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as Error).message).toMatch(/0 of the 1 replica\(s\) required/);
    expect(await exists(master, 'distlock:{r}')).toBe(0); // the unconfirmed write was undone

    // The negative control: the lock granted without replicaAcks is lost with its master.
    const holder = await lockerOn([sentinelClient()]).acquire('r', { ttlMs: 30_000 });
    await delay(50);
    await master.kill();
    replica.resume();
    await group.waitUntilHealthy(); // the replica, without the key, is the master now
    expect(await group.master()).toBe(replica);
    const second = await lockerOn([sentinelClient()]).acquire('r', { ttlMs: 5_000, waitMs: 5_000 });
    expect(holder.remainingMs()).toBeGreaterThan(0); // two holders at once
    await second.release();
  }, 30_000);
});
