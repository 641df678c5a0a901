import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Locker } from '../../src/index.js';
import { type RedisCluster, type RedisServer, startRedisCluster } from '../../src/testing/index.js';
import { resourceWhere } from '../support/cluster-keys.js';
import { isRunning } from '../support/processes.js';

/** One key per master, found by asking the cluster where keys land. */
async function keyOnEachMaster(cluster: RedisCluster): Promise<Map<RedisServer, string>> {
  const keys = new Map<RedisServer, string>();
  const masters = await cluster.masters();
  for (let i = 0; keys.size < masters.length; i++) {
    const master = await cluster.masterOf(`key-${i}`);
    if (!keys.has(master)) keys.set(master, `key-${i}`);
  }
  return keys;
}

/** A resource whose lock key `master` does not serve. */
function resourceNotServedBy(cluster: RedisCluster, master: RedisServer): Promise<string> {
  return resourceWhere(cluster, (owner) => owner !== master);
}

/** Sets `cluster-require-full-coverage` on every running node. */
async function coverage(cluster: RedisCluster, full: 'yes' | 'no'): Promise<void> {
  for (const node of cluster.nodes.filter((n) => n.running)) {
    const admin = new Redis(node.port, '127.0.0.1');
    await admin.config('SET', 'cluster-require-full-coverage', full);
    admin.disconnect();
  }
}

describe('startRedisCluster', () => {
  let cluster: RedisCluster;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = new Cluster([...cluster.startupNodes], { redisOptions: { commandTimeout: 1000 } });
  });

  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('starts 3 masters with a replica each, serving keys from every master', async () => {
    expect(cluster.nodes).toHaveLength(6);
    const masters = await cluster.masters();
    expect(masters).toEqual(cluster.nodes.slice(0, 3));
    for (const [index, master] of masters.entries()) {
      expect(await cluster.replicasOf(master)).toEqual([cluster.nodes[3 + index]]);
    }

    const keys = await keyOnEachMaster(cluster);
    expect(new Set(keys.keys()).size).toBe(3);
    for (const [master, key] of keys) {
      await client.set(key, `on ${master.port}`);
      expect(await client.get(key)).toBe(`on ${master.port}`);
      const direct = new Redis(master.port, '127.0.0.1');
      expect(await direct.get(key)).toBe(`on ${master.port}`);
      direct.disconnect();
    }
  });

  it('moves a slot to the replica that fails over, keeping its keys', async () => {
    const key = 'failover-key';
    await client.set(key, 'kept');
    const master = await cluster.masterOf(key);
    const [replica] = await cluster.replicasOf(master);
    if (!replica) throw new Error('the master has no replica');

    await cluster.failover(replica);

    expect(await cluster.masterOf(key)).toBe(replica);
    expect(await cluster.replicasOf(replica)).toEqual([master]);
    expect(await client.get(key)).toBe('kept');
  });

  it('replaces a killed master with its replica while the other shards keep answering', async () => {
    const keys = await keyOnEachMaster(cluster);
    for (const [master, key] of keys) await client.set(key, `on ${master.port}`);
    const [victim, victimKey] = [...keys][0] as [RedisServer, string];
    const [replica] = await cluster.replicasOf(victim);
    const direct = new Redis(victim.port, '127.0.0.1');
    expect(await direct.wait(1, 2000)).toBe(1); // the replica holds the key before the kill
    direct.disconnect();

    await victim.kill();
    const killedAt = Date.now();
    while ((await cluster.masterOf(victimKey)) === victim && Date.now() - killedAt < 10_000) {
      for (const [master, key] of keys) {
        if (master !== victim) expect(await client.get(key)).toBe(`on ${master.port}`);
      }
      await delay(100);
    }
    const replacedAfterMs = Date.now() - killedAt;

    expect(await cluster.masterOf(victimKey)).toBe(replica);
    expect(replacedAfterMs).toBeLessThan(5000);
    await cluster.waitUntilHealthy();
    expect(await client.get(victimKey)).toBe(`on ${victim.port}`);

    await victim.restart(); // with its nodes.conf: it rejoins as its replacement's replica
    await cluster.waitUntilHealthy();
    expect(await cluster.replicasOf(replica as RedisServer)).toEqual([victim]);
  });

  it('keeps the other shards serving while one has no master; killed nodes rejoin on restart', async () => {
    const locker = new Locker({ nodes: [client] });
    const keys = await keyOnEachMaster(cluster);
    for (const [master, key] of keys) await client.set(key, `on ${master.port}`);
    const [master, key] = [...keys][1] as [RedisServer, string];
    const elsewhere = await resourceNotServedBy(cluster, master);
    const replicas = await cluster.replicasOf(master);
    // Redis's default, which the fixture turns off: a shard without a master stops them all.
    await coverage(cluster, 'yes');
    for (const replica of replicas) await replica.kill();
    await master.kill();

    const other = new Redis(([...keys.keys()].find((node) => node !== master) as RedisServer).port);
    while (!/^cluster_state:fail/m.test(await other.cluster('INFO'))) await delay(50);
    const down = await locker.acquire(elsewhere, { ttlMs: 5_000, waitMs: 0 }).catch((e) => e);
    expect((down as Error).message).toMatch(
      /CLUSTERDOWN .*\(the cluster cannot serve the slot now\)/,
    );
    await coverage(cluster, 'no');
    let info = await other.cluster('INFO');
    while (!/^cluster_state:ok/m.test(info)) {
      await delay(50);
      info = await other.cluster('INFO');
    }
    expect(info).toMatch(/^cluster_slots_fail:[1-9]/m); // the dead shard's slots failed, not the cluster
    for (const [owner, ownedKey] of keys) {
      if (owner !== master) expect(await client.get(ownedKey)).toBe(`on ${owner.port}`);
    }
    await (await locker.acquire(elsewhere, { ttlMs: 5_000, waitMs: 0 })).release();
    await locker.close();

    other.disconnect();
    for (const node of [master, ...replicas]) await node.restart();
    await cluster.waitUntilHealthy();
    expect(await cluster.masterOf(key)).toBe(master);
    expect(await cluster.replicasOf(master)).toEqual(replicas);
    expect(await client.get(key)).toBeNull(); // restarted with empty memory
  });

  it('moves a slot with its keys, or stops half-way, where commands get ASK', async () => {
    const key = 'moving-key';
    await client.set(key, 'kept');
    const from = await cluster.masterOf(key);
    const to = (await cluster.masters()).find((master) => master !== from) as RedisServer;
    const slot = Number(await client.cluster('KEYSLOT', key));
    const move = await cluster.beginSlotMove(slot, to);
    expect([move.from, move.to, move.slot]).toEqual([from, to, slot]);
    const source = new Redis(from.port, '127.0.0.1');
    expect(await source.get(key)).toBe('kept'); // not moved yet: the source still serves it
    expect(await move.moveKeys()).toBe(1);
    await expect(source.get(key)).rejects.toThrow(`ASK ${slot} 127.0.0.1:${to.port}`);
    await move.finish();
    await expect(source.get(key)).rejects.toThrow(`MOVED ${slot} 127.0.0.1:${to.port}`);
    source.disconnect();
    expect(await cluster.masterOf(key)).toBe(to);
    expect(await client.get(key)).toBe('kept');

    await cluster.moveSlot(slot, from); // and back, in one call
    expect(await cluster.masterOf(key)).toBe(from);
    expect(await client.get(key)).toBe('kept');
    await expect(cluster.moveSlot(slot, from)).rejects.toThrow(`already serves slot ${slot}`);
    await expect(cluster.moveSlot(16_384, to)).rejects.toThrow(
      'Expected `slot` to be an integer from 0 to 16383, got `16384` (number)',
    );
  });

  it('stop() kills every node and removes every temp dir, and may be called twice', async () => {
    const pids = cluster.nodes.map((node) => node.pid as number);
    const dirs = cluster.nodes.map((node) => node.dir);
    client.disconnect();
    await cluster.stop();
    await cluster.stop();
    expect(pids.filter(isRunning)).toEqual([]);
    expect(dirs.filter(existsSync)).toEqual([]);
  });

  it('rejects bad options before starting anything', async () => {
    await expect(startRedisCluster({ masters: 0 })).rejects.toThrow(
      'Expected `masters` to be an integer >= 1, got `0` (number)',
    );
    await expect(startRedisCluster({ replicasPerMaster: 1.5 })).rejects.toThrow(TypeError);
  });
});
