import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fencedWrite, Locker, NoQuorumError, type RedisClient } from '../../src/index.js';
import { type RedisCluster, type RedisServer, startRedisCluster } from '../../src/testing/index.js';
import {
  type ClusterClientKind,
  clusterClientKinds,
  handSlotOver,
} from '../support/cluster-clients.js';
import { resourceWhere } from '../support/cluster-keys.js';

/**
 * A Redis Cluster as one lock node through the Cluster clients of node-redis (5 and 6) and
 * valkey-glide: the behaviours test/integration/cluster.test.ts checks for an ioredis Cluster.
 * The fault cases (a paused master, a killed one) run every client kind at once, on one fault
 * each.
 */
let cluster: RedisCluster;
const lockers: Locker[] = [];

const clients = clusterClientKinds(() => cluster);
/** The clients test/integration/cluster.test.ts does not cover (it uses an ioredis Cluster). */
const KINDS = clients.kinds.filter(({ name }) => !/^io/.test(name));

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  await clients.close();
  for (const node of cluster.nodes) if (node.paused) node.resume();
});
afterAll(async () => {
  await cluster?.stop();
});

function lockerOn(client: RedisClient, options: { retryDelayMs?: number } = {}): Locker {
  const locker = new Locker({ nodes: [client], ...options });
  lockers.push(locker);
  return locker;
}

/** A resource (`<name><i>`) whose lock key the master serves, or (`served` false) does not. */
function resourceServedBy(master: RedisServer, served = true, name = 'r'): Promise<string> {
  return resourceWhere(cluster, (owner) => (owner === master) === served, name);
}

/** A name for resources of one client kind, so that no two kinds share a key. */
function prefixOf(kind: ClusterClientKind | undefined): string {
  return kind?.name.replace(/\W+/g, '-') ?? '';
}

describe.each(KINDS)('a Redis Cluster as one lock node through $name', (kind) => {
  it('locks on every shard, plain, fenced and fair, named by its root nodes', async () => {
    const client = await kind.open();
    const locker = lockerOn(client);
    const addresses = cluster.startupNodes.map(({ host, port }) => `${host}:${port}`);
    expect(locker.nodes).toEqual([`cluster ${addresses.sort().join(',')}`]);
    const masters = await cluster.masters();
    const prefix = prefixOf(kind);
    const resources = await Promise.all(masters.map((m) => resourceServedBy(m, true, prefix)));
    for (const resource of resources) {
      const plain = await locker.acquire(resource, { ttlMs: 5_000 });
      expect(await plain.release()).toBe('released');
      const fenced = await locker.acquire(resource, { ttlMs: 5_000, fencing: true });
      expect(fenced.fence).toBeGreaterThan(0n); // from the master's clock (docs/fencing.md)
      // A fenced write through the caller's client, routed to the key's master.
      expect(await fencedWrite(client, `${resource}:data`, fenced.fence ?? 0n, 'v')).toBe(
        'applied',
      );
      expect(await fenced.release()).toBe('released');
      const fair = await locker.acquire(resource, { ttlMs: 5_000, fair: true });
      expect(await fair.release()).toBe('released');
    }
  });

  it('lists the locks of every master (SCAN on each), with their owners', async () => {
    const client = await kind.open();
    const locker = lockerOn(client);
    const masters = await cluster.masters();
    const prefix = `${prefixOf(kind)}-ls`;
    const resources = await Promise.all(masters.map((m) => resourceServedBy(m, true, prefix)));
    const locks = await Promise.all(
      resources.map((r) => locker.acquire(r, { ttlMs: 10_000, owner: `owner-${r}` })),
    );
    const listed = [];
    for await (const item of locker.list({ match: `${prefix}*` })) listed.push(item);
    expect(listed.map(({ kind, name, owners }) => [kind, name, owners])).toEqual(
      [...resources].sort().map((r) => ['lock', r, [`owner-${r}`]]),
    );
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('wakes a waiter over pub/sub on release, long before its next retry', async () => {
    const client = await kind.open();
    const resource = `${prefixOf(kind)}-handoff`;
    const holder = await lockerOn(client).acquire(resource, { ttlMs: 10_000 });
    const waiting = lockerOn(client, { retryDelayMs: 3_000 }).acquire(resource, {
      ttlMs: 10_000,
      waitMs: 10_000,
    });
    await delay(300); // the waiter made its first attempt and sleeps for about 3 s
    const released = performance.now();
    await holder.release();
    const next = await waiting;
    const handOffMs = performance.now() - released;
    console.info(`${kind.name}: hand-off ${handOffMs.toFixed(0)} ms after release`);
    expect(handOffMs).toBeLessThan(500);
    await next.release();
  });

  it('follows MOVED when a slot moved: the first attempt locks on its new master', async () => {
    const locker = lockerOn(await kind.open());
    await (await locker.acquire('warm-up', { ttlMs: 1_000 })).release();
    const masters = await cluster.masters();
    const [from, to] = masters;
    if (!from || !to) throw new Error('too few masters');
    const resource = await resourceServedBy(from, true, `moving-${prefixOf(kind)}`);
    await handSlotOver(masters, `distlock:{${resource}}`);

    const reasons: string[] = [];
    locker.events.on('retry', ({ nodes }) => {
      for (const node of nodes) if (node.outcome === 'error') reasons.push(node.error.message);
    });
    const lock = await locker.acquire(resource, { ttlMs: 5_000, waitMs: 3_000 });
    expect(reasons).toEqual([]); // no second attempt (valkey-glide follows it by itself)
    const owner = new Redis(to.port, '127.0.0.1');
    expect(await owner.exists(`distlock:{${resource}}`)).toBe(1);
    owner.disconnect();
    expect(await lock.release()).toBe('released');
  });
});

/** A locker per client kind, each with its connections open (it locked once). */
async function warmLockers(): Promise<Locker[]> {
  const lockers = await Promise.all(KINDS.map(async (kind) => lockerOn(await kind.open())));
  for (const locker of lockers) await (await locker.acquire('warm-up', { ttlMs: 1_000 })).release();
  return lockers;
}

describe('faults, every client kind at once', () => {
  it('keeps locking on the other shards while one master stops answering', async () => {
    const lockers = await warmLockers();
    const [stopped] = await cluster.masters();
    if (!stopped) throw new Error('no master');
    const onStopped = await resourceServedBy(stopped);
    const alsoOnStopped = await resourceServedBy(stopped, true, 'also');
    const elsewhere = await resourceServedBy(stopped, false);
    stopped.pause();
    for (const [i, locker] of lockers.entries()) {
      const name = KINDS[i]?.name;
      const error = await locker.acquire(onStopped, { ttlMs: 2_000, waitMs: 0 }).catch((e) => e);
      expect(error, name).toBeInstanceOf(NoQuorumError);
      // The stalled shard's unanswered SET does not hold back the other shards' keys.
      const times: number[] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const started = performance.now();
        const lock = await locker.acquire(`${elsewhere}`, { ttlMs: 2_000, waitMs: 0 });
        times.push(performance.now() - started);
        expect(await lock.release()).toBe('released');
      }
      console.info(`${name}: locks on another shard in ${times.map((t) => t.toFixed(1))} ms`);
      expect(Math.max(...times), name).toBeLessThan(200);
      // Stalls are tracked per master: another key of the stopped master is not sent either.
      for (const resource of [onStopped, alsoOnStopped]) {
        await expect(locker.acquire(resource, { ttlMs: 2_000, waitMs: 0 })).rejects.toThrow(
          /has not answered an earlier command/,
        );
      }
    }
    stopped.resume();
    await cluster.waitUntilHealthy();
  });

  it('never sends a lock command after giving up on it, and locks on the promoted replica', async () => {
    const lockers = await warmLockers();
    const [victim] = await cluster.masters();
    if (!victim) throw new Error('no master');
    const [replica] = await cluster.replicasOf(victim);
    if (!replica) throw new Error('no replica');
    const resources = await Promise.all(
      KINDS.map((kind) => resourceServedBy(victim, true, `victim-${prefixOf(kind)}`)),
    );
    const watch = new Redis(replica.port, '127.0.0.1');
    const seen: string[] = [];
    watch.on('error', () => {});
    const monitor = await watch.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (resources.some((r) => args.some((arg) => arg.includes(`{${r}}`)))) {
        seen.push(args.join(' '));
      }
    });

    await victim.kill();
    // A TTL whose per-node timeout (300 ms) outlasts valkey-glide's requestTimeout (250 ms).
    const attempts = lockers.map((locker, i) =>
      locker.acquire(resources[i] as string, { ttlMs: 60_000, waitMs: 0 }).catch((e) => e),
    );
    for (const [i, error] of (await Promise.all(attempts)).entries()) {
      expect(error, KINDS[i]?.name).toBeInstanceOf(NoQuorumError);
    }
    // The replica takes over at once: a client still retrying a command would now reach it.
    await cluster.failover(replica, 'TAKEOVER');
    // The slot table was refreshed: the promoted replica is asked (for another resource).
    for (const [i, locker] of lockers.entries()) {
      const resource = await resourceServedBy(replica, true, `after-${prefixOf(KINDS[i])}`);
      const lock = await locker.acquire(resource, { ttlMs: 5_000, waitMs: 3_000 });
      expect(await lock.release(), KINDS[i]?.name).toBe('released');
    }
    // The old master comes back as a replica: a command a client still held for it would now
    // be answered with MOVED and followed to the promoted replica.
    await victim.restart();
    await cluster.waitUntilHealthy();
    await delay(1_500); // past node-redis's reconnection to it (its backoff reaches 500 ms)
    monitor.disconnect();
    watch.disconnect();
    expect(seen.filter((command) => /^set /i.test(command))).toEqual([]);
    const admin = new Redis(replica.port, '127.0.0.1');
    for (const resource of resources) expect(await admin.exists(`distlock:{${resource}}`)).toBe(0);
    admin.disconnect();
  }, 30_000);
});
