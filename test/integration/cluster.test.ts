import { setTimeout as delay } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { Cluster as ValkeyCluster } from 'iovalkey';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_RECHECK_MS } from '../../src/engine/node-identity.js';
import { Locker, NoQuorumError } from '../../src/index.js';
import { type RedisCluster, type RedisServer, startRedisCluster } from '../../src/testing/index.js';
import { until } from '../../src/testing/until.js';
import { handSlotOver } from '../support/cluster-clients.js';
import { resourceWhere } from '../support/cluster-keys.js';

let cluster: RedisCluster;
const clients: Cluster[] = [];
const lockers: Locker[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  for (const client of clients.splice(0)) client.disconnect();
  for (const node of cluster.nodes) if (node.paused) node.resume();
});
afterAll(async () => {
  await cluster?.stop();
});

/** A caller's Cluster client, with `options`, disconnected after the test. */
function clusterClient(options: ConstructorParameters<typeof Cluster>[1] = {}): Cluster {
  const client = new Cluster([...cluster.startupNodes], options);
  client.on('error', () => {});
  clients.push(client);
  return client;
}

function lockerOn(
  client: Cluster,
  options: { retryDelayMs?: number; nodeTimeoutMs?: number } = {},
): Locker {
  const locker = new Locker({ nodes: [client], ...options });
  lockers.push(locker);
  return locker;
}

/** A resource (`<name><i>`) whose lock key the master serves, or (`served` false) does not. */
function resourceServedBy(master: RedisServer, served = true, name = 'r'): Promise<string> {
  return resourceWhere(cluster, (owner) => (owner === master) === served, name);
}

/**
 * Hands the (empty) slot of a new resource named from `name`, served by the first master, to
 * the second, behind the clients' backs: they still send its commands to the first, which
 * answers MOVED.
 */
async function slotHandedOver(name: string) {
  const masters = await cluster.masters();
  const [from, to] = masters;
  if (!from || !to) throw new Error('too few masters');
  const resource = await resourceServedBy(from, true, name);
  const slot = await handSlotOver(masters, `distlock:{${resource}}`);
  return { resource, slot, to };
}

describe('semaphores, read-write locks and acquireAll on a Redis Cluster', () => {
  it('work on every shard, and acquireAll across shards', async () => {
    const locker = lockerOn(clusterClient());
    const masters = await cluster.masters();
    const resources = await Promise.all(masters.map((master) => resourceServedBy(master)));
    for (const name of resources) {
      const pool = locker.semaphore(name, { permits: 2 });
      const permits = [await pool.acquire({ ttlMs: 5_000 }), await pool.acquire({ ttlMs: 5_000 })];
      expect(await pool.tryAcquire({ ttlMs: 5_000 })).toBeNull();
      for (const permit of permits) expect(await permit.release()).toBe('released');
      const doc = locker.readWriteLock(name);
      const reader = await doc.read.acquire({ ttlMs: 5_000 });
      expect(await doc.write.tryAcquire({ ttlMs: 5_000 })).toBeNull();
      expect(await reader.release()).toBe('released');
      const writer = await doc.write.acquire({ ttlMs: 5_000 });
      expect(await writer.release()).toBe('released');
    }
    // One resource per shard: three hash slots, locked all or none.
    const all = await locker.acquireAll(resources, { ttlMs: 5_000 });
    expect(all.resources).toEqual([...resources].sort());
    const busy = await locker
      .acquire(resources[1] as string, { ttlMs: 5_000, waitMs: 0 })
      .catch((e) => e);
    expect((busy as Error).name).toBe('LockBusyError');
    expect(await all.release()).toBe('released');
  });
});

describe('a Redis Cluster as one lock node', () => {
  it('locks on every shard, plain, fenced and fair, named by its startup nodes', async () => {
    const locker = lockerOn(clusterClient());
    expect(locker.nodes[0]).toMatch(/^cluster 127\.0\.0\.1:\d+,127\.0\.0\.1:\d+/);
    const masters = await cluster.masters();
    const resources = await Promise.all(masters.map((master) => resourceServedBy(master)));
    for (const resource of resources) {
      const plain = await locker.acquire(resource, { ttlMs: 5_000 });
      expect(await plain.release()).toBe('released');
      const fenced = await locker.acquire(resource, { ttlMs: 5_000, fencing: true });
      expect(fenced.fence).toBeGreaterThan(0n); // from the master's clock (docs/fencing.md)
      expect(await fenced.release()).toBe('released');
      const fair = await locker.acquire(resource, { ttlMs: 5_000, fair: true });
      expect(await fair.release()).toBe('released');
    }
  });

  it('locks through an iovalkey Cluster client too', async () => {
    const client = new ValkeyCluster([...cluster.startupNodes]);
    client.on('error', () => {});
    const locker = new Locker({ nodes: [client] });
    try {
      for (const master of await cluster.masters()) {
        const resource = await resourceServedBy(master, true, 'valkey');
        const lock = await locker.acquire(resource, { ttlMs: 5_000, fencing: true });
        expect(await lock.release()).toBe('released');
      }
    } finally {
      await locker.close();
      client.disconnect();
    }
  });

  it('wakes a waiter over pub/sub on release, long before its next retry', async () => {
    const client = clusterClient();
    const holderLocker = lockerOn(client);
    const holder = await holderLocker.acquire('handoff', { ttlMs: 10_000 });
    const retryDelayMs = 3_000;
    const waiting = lockerOn(client, { retryDelayMs }).acquire('handoff', {
      ttlMs: 10_000,
      waitMs: 10_000,
    });
    // The waiter made its first attempt, joined the line, and sleeps for about 3 s.
    await until(
      'the waiter in line',
      async () => {
        const { waiters } = await holderLocker.inspect('handoff');
        return waiters > 0 ? { done: true } : { reason: `${waiters} waiting` };
      },
      5_000,
    );
    const released = performance.now();
    await holder.release();
    const next = await waiting;
    // Its next attempt comes at least `retryDelayMs / 2` after its first (jitter): only the
    // wake-up comes this early.
    expect(performance.now() - released).toBeLessThan(retryDelayMs / 4);
    await next.release();
  });

  it('keeps locking on the other shards while one master stops answering', async () => {
    const locker = lockerOn(clusterClient());
    await (await locker.acquire('warm-up', { ttlMs: 1_000 })).release();
    const [stopped] = await cluster.masters();
    if (!stopped) throw new Error('no master');
    const onStopped = await resourceServedBy(stopped);
    const elsewhere = await resourceServedBy(stopped, false);
    stopped.pause();
    const error = await locker.acquire(onStopped, { ttlMs: 2_000, waitMs: 0 }).catch((e) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    // The stalled shard's unanswered SET does not hold back the other shards' keys.
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const lock = await locker.acquire(`${elsewhere}`, { ttlMs: 2_000, waitMs: 0 });
      expect(performance.now() - started).toBeLessThan(200);
      expect(await lock.release()).toBe('released');
    }
    await expect(locker.acquire(onStopped, { ttlMs: 2_000, waitMs: 0 })).rejects.toThrow(
      /has not answered an earlier command/,
    );
    stopped.resume();
    await cluster.waitUntilHealthy();
  });

  it('never sends a lock command after giving up on it, however the client retries', async () => {
    // The caller's client retries a command whose shard failed, for up to 16 x 2 s.
    const client = clusterClient({ retryDelayOnFailover: 2_000, retryDelayOnClusterDown: 2_000 });
    const locker = lockerOn(client);
    await (await locker.acquire('warm-up', { ttlMs: 1_000 })).release();
    const [victim] = await cluster.masters();
    if (!victim) throw new Error('no master');
    const [replica] = await cluster.replicasOf(victim);
    if (!replica) throw new Error('no replica');
    const resource = await resourceServedBy(victim);
    const watch = new Redis(replica.port, '127.0.0.1');
    const seen: string[] = [];
    watch.on('error', () => {});
    const monitor = await watch.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.some((arg) => arg.includes(`{${resource}}`))) seen.push(args[0] ?? '');
    });

    await victim.kill();
    const error = await locker.acquire(resource, { ttlMs: 30_000, waitMs: 0 }).catch((e) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    await cluster.waitUntilHealthy(); // the replica took over the slot
    await delay(2_500); // past the caller's client's next retry
    monitor.disconnect();
    watch.disconnect();
    expect(seen.filter((command) => /^set$/i.test(command))).toEqual([]);
    const admin = new Redis(replica.port, '127.0.0.1');
    expect(await admin.exists(`distlock:{${resource}}`)).toBe(0);
    admin.disconnect();
    await victim.restart();
    await cluster.waitUntilHealthy();
  }, 30_000);

  it('follows MOVED when a slot moved: the first attempt locks on its new master', async () => {
    const locker = lockerOn(clusterClient());
    await (await locker.acquire('warm-up', { ttlMs: 1_000 })).release();
    const { resource, to } = await slotHandedOver('moving'); // no other test's keys

    const reasons: string[] = [];
    locker.events.on('retry', ({ nodes }) => {
      for (const node of nodes) if (node.outcome === 'error') reasons.push(node.error.message);
    });
    const lock = await locker.acquire(resource, { ttlMs: 5_000, waitMs: 3_000 });
    expect(reasons).toEqual([]); // no second attempt
    const owner = new Redis(to.port, '127.0.0.1');
    expect(await owner.exists(`distlock:{${resource}}`)).toBe(1);
    owner.disconnect();
    expect(await lock.release()).toBe('released');
  });

  it('says that a slot moved to a master that does not answer, naming it', async () => {
    // Time to follow the MOVED and find that master's address refusing connections, however
    // loaded the machine: only then is its failure, not the per-node timeout, the answer.
    const locker = lockerOn(clusterClient(), { nodeTimeoutMs: 1_000 });
    await (await locker.acquire('warm-up', { ttlMs: 5_000 })).release();
    const { resource, slot, to } = await slotHandedOver('dead-end'); // no other test's keys
    await to.kill(); // the client still sends the slot's commands to `from`, which says MOVED
    try {
      const error = await locker.acquire(resource, { ttlMs: 5_000, waitMs: 0 }).catch((e) => e);
      // Before: "not connected to cluster ... (127.0.0.1:<to>) (end): connect ECONNREFUSED".
      expect((error as Error).message).toMatch(
        new RegExp(
          `slot ${slot} moved to 127\\.0\\.0\\.1:${to.port} \\(MOVED\\), which did not answer: .*ECONNREFUSED`,
        ),
      );
    } finally {
      await to.restart();
      await cluster.waitUntilHealthy();
    }
  });

  it('says to pass a Cluster client when given the URL of a cluster node', async () => {
    const [master] = await cluster.masters();
    const locker = new Locker({ nodes: [`redis://127.0.0.1:${master?.port}`] });
    lockers.push(locker);
    const other = await resourceServedBy(master as RedisServer, false);
    const started = performance.now();
    const error = await locker.acquire(other, { ttlMs: 5_000, waitMs: 5_000 }).catch((e) => e);
    expect(performance.now() - started).toBeLessThan(500); // at once, not after the wait
    expect((error as Error).message).toMatch(
      /is a Redis Cluster node \(it answered MOVED \d+ .*\): pass a Cluster client/,
    );
  });
  it('names the real cause of a cluster it cannot log in to, at once', async () => {
    const configure = async (password: string, as?: string) => {
      for (const node of cluster.nodes) {
        const admin = new Redis(node.port, '127.0.0.1', as ? { password: as } : {});
        await admin.config('SET', 'masterauth', password);
        await admin.config('SET', 'requirepass', password);
        admin.disconnect();
      }
    };
    await configure('sekret');
    try {
      const locker = lockerOn(clusterClient({ redisOptions: { password: 'wrong' } }));
      const started = performance.now();
      const error = await locker.acquire('auth', { ttlMs: 5_000, waitMs: 3_000 }).catch((e) => e);
      expect(performance.now() - started).toBeLessThan(1_500); // before: the whole 3 s
      expect((error as Error).message).toMatch(/WRONGPASS/); // before: "Failed to refresh slots cache."
      expect((error as Error).message).not.toMatch(/EVICTION|grant \+info/);
    } finally {
      await configure('', 'sekret');
    }
  });
});

describe('inspecting and breaking a lock on a Redis Cluster', () => {
  it('reads the lock on its shard, and a forced release hands it to the waiter at once', async () => {
    const client = clusterClient();
    const operator = lockerOn(client);
    const holder = await lockerOn(client).acquire('break', { ttlMs: 10_000, fencing: true });
    const retryDelayMs = 3_000; // without a wake-up, the waiter sleeps 1.5 s at least
    const waiting = lockerOn(client, { retryDelayMs }).acquire('break', {
      ttlMs: 10_000,
      waitMs: 10_000,
    });
    const subscribed = async () => {
      const found = await Promise.all(
        client
          .nodes('master')
          .flatMap((node) => [
            node.pubsub('CHANNELS', 'distlock:*'),
            node.call('PUBSUB', 'SHARDCHANNELS', 'distlock:*'),
          ]),
      );
      return found.some((channels) => (channels as string[]).length > 0);
    };
    while ((await operator.inspect('break')).waiters === 0 || !(await subscribed())) {
      await delay(10);
    }
    const seen = await operator.inspect('break');
    expect(seen).toMatchObject({
      state: 'held',
      heldOn: 1,
      quorum: 1,
      fence: holder.fence,
      waiters: 1,
    });
    const startedAt = performance.now();
    const done = await operator.forceRelease('break');
    const next = await waiting;
    expect(performance.now() - startedAt).toBeLessThan(retryDelayMs / 4);
    expect(done).toMatchObject({ result: 'released', handedOver: true });
    await expect(holder.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });
    await next.release();
  });

  it('elects on its shard: resign hands over at once, and an observer sees each change', async () => {
    const client = clusterClient();
    const retryDelayMs = 3_000; // without a wake-up, the waiting candidate sleeps 1.5 s at least
    const timings = { leaseMs: 10_000, renewDeadlineMs: 6_000, retryMs: 5_000 };
    const [a, b, c] = [1, 2, 3].map(() =>
      lockerOn(client, { retryDelayMs }).election('ci', timings),
    );
    const seen: (string | null)[] = [];
    const stop = new AbortController();
    const observing = (async () => {
      for await (const change of (c as NonNullable<typeof c>).observe({ signal: stop.signal })) {
        seen.push(change ? change.value : null);
      }
    })().catch(() => undefined);
    const first = await (a as NonNullable<typeof a>).campaign('a');
    const waiting = (b as NonNullable<typeof b>).campaign('b');
    // The observer reads the leader again on each change message: one that reads after a
    // quick resign sees 'b' straight away, so 'a' must have been seen before the resign.
    const campaignedAt = performance.now();
    while (seen.at(-1) !== 'a') {
      expect(performance.now() - campaignedAt).toBeLessThan(timings.retryMs / 2);
      await delay(10);
    }
    const resignedAt = performance.now();
    await first.resign();
    const second = await waiting;
    expect(performance.now() - resignedAt).toBeLessThan(retryDelayMs / 4);
    expect(second.term).toBeGreaterThan(first.term);
    // Seen over pub/sub, well before the observer's own re-read every retryMs.
    while (seen.at(-1) !== 'b') {
      expect(performance.now() - resignedAt).toBeLessThan(timings.retryMs / 2);
      await delay(10);
    }
    await second.resign();
    stop.abort();
    await observing;
  });
});

describe('names beginning with `}` on a Redis Cluster', () => {
  // `distlock:{}x}` would have an empty hash tag: each of its keys would hash whole, to a
  // slot of its own, and the plain acquire would meet MOVED until its waitMs ran out.
  it.each(['}x', '}}', '}'])('%s: every kind works, its keys all in one slot', async (name) => {
    const client = clusterClient();
    const prefix = `edge${Buffer.from(name).toString('hex')}:`; // this test's keys only
    const retryDelayMs = 3_000; // without a wake-up, the waiter sleeps 1.5 s at least
    const [owner, other] = [0, 1].map(() => {
      const locker = new Locker({ nodes: [client], prefix, retryDelayMs });
      lockers.push(locker);
      return locker;
    }) as [Locker, Locker];

    const plain = await owner.acquire(name, { ttlMs: 5_000, waitMs: 1_000 });
    expect(await plain.release()).toBe('released');
    const fenced = await owner.acquire(name, { ttlMs: 10_000, fencing: true });
    expect(fenced.fence).toBeGreaterThan(0n); // from the master's clock (docs/fencing.md)
    const waiting = other.acquire(name, { ttlMs: 10_000, waitMs: 10_000, fencing: true });
    while ((await owner.inspect(name)).waiters === 0) await delay(10);
    const permit = await owner.semaphore(name, { permits: 1 }).acquire({ ttlMs: 10_000 });
    const writer = await owner.readWriteLock(name).write.acquire({ ttlMs: 10_000 });
    const timings = { leaseMs: 10_000, renewDeadlineMs: 6_000, retryMs: 5_000 };
    const leader = await owner.election(name, timings).campaign('a');
    expect(await other.election(name, timings).leader()).toMatchObject({ value: 'a' });

    const held = (
      await Promise.all(client.nodes('master').map((node) => node.keys(`${prefix}*`)))
    ).flat();
    const base = `${prefix}}{${Buffer.from(name).toString('hex')}}`; // the documented layout
    expect(held).toEqual(
      expect.arrayContaining(
        ['', ':fence', ':queue', ':permits', ':rw:writer', ':election', ':election:leader'].map(
          (suffix) => base + suffix,
        ),
      ),
    );
    const slots = await Promise.all(held.map((key) => client.cluster('KEYSLOT', key)));
    expect(new Set(slots).size).toBe(1);

    const startedAt = performance.now();
    expect(await owner.forceRelease(name)).toMatchObject({ result: 'released', handedOver: true });
    const next = await waiting;
    expect(performance.now() - startedAt).toBeLessThan(retryDelayMs / 4);
    expect(next.fence).toBeGreaterThan(fenced.fence as bigint);
    for (const hold of [next, permit, writer]) expect(await hold.release()).toBe('released');
    await leader.resign();
    expect(await owner.inspect(name)).toMatchObject({ state: 'free', waiters: 0 });
  });
});

describe('eviction policies on a Redis Cluster', () => {
  /** Sets `node`'s memory limit and policy (`noeviction`, no limit: as the cluster started). */
  async function evicting(node: RedisServer, policy = 'noeviction'): Promise<void> {
    const admin = new Redis(node.port, '127.0.0.1');
    await admin.config('SET', 'maxmemory', policy === 'noeviction' ? '0' : '100mb');
    await admin.config('SET', 'maxmemory-policy', policy);
    admin.disconnect();
  }

  it('names the master whose policy may evict lock keys, also a replica promoted later', async () => {
    const [, risky, failing] = await cluster.masters();
    if (!risky || !failing) throw new Error('too few masters');
    const [promoted] = await cluster.replicasOf(failing);
    if (!promoted) throw new Error('no replica');
    await evicting(risky, 'allkeys-lru');
    await evicting(promoted, 'volatile-lru');
    try {
      const locker = lockerOn(clusterClient());
      const warnings: string[] = [];
      locker.events.on('warning', ({ message }) => warnings.push(message));
      await (await locker.acquire('evict', { ttlMs: 1_000 })).release();
      // Before: the policy alone, the master not named (the node is the whole cluster).
      expect(warnings).toEqual([
        expect.stringMatching(
          new RegExp(
            `^master 127\\.0\\.0\\.1:${risky.port} \\(slots [\\d,-]+\\): maxmemory-policy allkeys-lru`,
          ),
        ),
      ]);

      await cluster.failover(promoted);
      const resource = await resourceServedBy(promoted, true, 'evict');
      const promotedAt = performance.now();
      // Read again once the cluster names its new master, not at the next periodic read.
      while (!warnings.some((w) => w.includes(`:${promoted.port} `))) {
        expect(performance.now() - promotedAt).toBeLessThan(CLUSTER_RECHECK_MS);
        await (await locker.acquire(resource, { ttlMs: 1_000, waitMs: 1_000 })).release();
        await delay(20);
      }
      expect(warnings[1]).toMatch(
        new RegExp(
          `^master 127\\.0\\.0\\.1:${promoted.port} \\(slots [\\d,-]+\\): maxmemory-policy volatile-lru`,
        ),
      );
      expect(warnings).toHaveLength(2); // each risk once, however often the masters are read
    } finally {
      await Promise.all([evicting(risky), evicting(promoted)]);
    }
  });
});
