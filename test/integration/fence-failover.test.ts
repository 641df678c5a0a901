import { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fencedWrite, Locker } from '../../src/index.js';
import {
  type RedisCluster,
  type RedisNodes,
  type RedisSentinelGroup,
  type RedisServer,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
} from '../../src/testing/index.js';

// Fences and terms must grow across an empty restart of the node that keeps the counter and
// across a failover to a replica that missed the last increments (docs/fencing.md, "Restarts
// and failovers"). The protected store is a server of its own, which keeps its memory.

let store: RedisNodes;
let storeClient: Redis;
const lockers: Locker[] = [];
const clients: (Redis | Cluster)[] = [];

beforeAll(async () => {
  store = await startRedis();
  storeClient = new Redis(store.urls[0] as string);
});
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(async () => {
  storeClient?.disconnect();
  await store?.stop();
});

/** A fresh locker on `client`, as a process started after the fault would make. */
function lockerOn(client: Redis | Cluster): Locker {
  clients.push(client);
  client.on('error', () => {}); // reconnects during a failover are expected
  // No grace: this is about the counter, not about waiting out the leases the node granted.
  const locker = new Locker({ nodes: [client], restartGraceMs: 0, nodeTimeoutMs: 400 });
  lockers.push(locker);
  return locker;
}

/** Asserts that `fences` grow strictly, naming them all when they do not. */
function expectGrowing(fences: readonly bigint[]): void {
  for (let i = 1; i < fences.length; i++) {
    expect(fences[i], `in order: ${fences.join(', ')}`).toBeGreaterThan(fences[i - 1] as bigint);
  }
}

/** Draws a fence on `client` into `fences`, writes with it to the store, and releases. */
async function fencedTurn(client: Redis | Cluster, resource: string, fences: bigint[]) {
  const lock = await lockerOn(client).acquire(resource, { ttlMs: 10_000, fencing: true });
  const fence = lock.fence as bigint;
  fences.push(fence);
  const written = await fencedWrite(storeClient, `${resource}:data`, fence, String(fence));
  expect(written, `fences so far: ${fences.join(', ')}`).toBe('applied');
  await lock.release();
}

/** Stops `replica` (SIGSTOP) and cuts its link: later writes reach only the master. */
async function makeLag(master: RedisServer, replica: RedisServer): Promise<void> {
  const admin = new Redis(master.url);
  try {
    await admin.call('WAIT', '1', '5000'); // what came before is on the replica
    replica.pause();
    await admin.client('KILL', 'TYPE', 'replica');
  } finally {
    admin.disconnect();
  }
}

describe('on a Sentinel group', () => {
  let group: RedisSentinelGroup;
  beforeAll(async () => {
    group = await startRedisSentinel({ masterName: 'fences' });
  });
  afterAll(async () => {
    await group?.stop();
  });
  const client = () => new Redis({ sentinels: [...group.sentinelAddresses], name: 'fences' });

  it('fences grow across a failover to a replica that missed the last ones', async () => {
    const fences: bigint[] = [];
    for (let i = 0; i < 3; i++) await fencedTurn(client(), 'account', fences);
    const master = await group.master();
    const [replica] = await group.replicas();
    if (!replica) throw new Error('no replica');
    await makeLag(master, replica);
    for (let i = 0; i < 2; i++) await fencedTurn(client(), 'account', fences);
    await master.kill();
    replica.resume();
    await group.waitUntilHealthy(); // the replica, which missed the last two, is the master
    expect(await group.master()).toBe(replica);
    await fencedTurn(client(), 'account', fences);
    expectGrowing(fences);
  }, 60_000);
});

describe('on a Redis Cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  const client = () => new Cluster([...cluster.startupNodes]);
  const timings = { leaseMs: 5_000, renewDeadlineMs: 3_000, retryMs: 1_000 };

  /** Elects a leader of `name` on a fresh locker, and has it resign: its term. */
  async function term(name: string): Promise<bigint> {
    const leadership = await lockerOn(client()).election(name, timings).campaign('v');
    const { term } = leadership;
    await leadership.resign();
    return term;
  }

  it("terms grow across an empty restart of the election's shard, and the failover after it", async () => {
    const terms = [await term('ci'), await term('ci')];
    await (await cluster.masterOf('distlock:{ci}')).restart(); // back within the node timeout:
    await cluster.waitUntilHealthy(); // still the master, now empty; its replica synced that
    terms.push(await term('ci'));
    const [replica] = await cluster.replicasOf(await cluster.masterOf('distlock:{ci}'));
    if (!replica) throw new Error('no replica');
    await cluster.failover(replica);
    terms.push(await term('ci'));
    expectGrowing(terms);
  }, 60_000);

  it('terms grow across a failover to a replica that missed the last ones', async () => {
    const terms = [await term('lag'), await term('lag')];
    const master = await cluster.masterOf('distlock:{lag}');
    const [replica] = await cluster.replicasOf(master);
    if (!replica) throw new Error('no replica');
    await makeLag(master, replica);
    terms.push(await term('lag'));
    await master.kill();
    replica.resume();
    await cluster.waitUntilHealthy(); // the replica, which missed the last term, took over
    expect(await cluster.masterOf('distlock:{lag}')).toBe(replica);
    terms.push(await term('lag'));
    expectGrowing(terms);
    await master.restart(); // it rejoins as the new master's replica
    await cluster.waitUntilHealthy();
  }, 60_000);
});
