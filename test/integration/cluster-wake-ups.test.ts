import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { busMessages, handOff } from '../../bench/cluster-bus.js';
import { CONNECT_WAIT_MS } from '../../src/driver/connection.js';
import { Locker, type LockerOptions, type RedisClient } from '../../src/index.js';
import { type RedisCluster, type RedisServer, startRedisCluster } from '../../src/testing/index.js';
import { until } from '../../src/testing/until.js';
import { clusterClientKinds } from '../support/cluster-clients.js';
import { resourceWhere } from '../support/cluster-keys.js';

/**
 * Wake-ups on a Redis Cluster: a hand-off is published with SPUBLISH on the lock's own shard
 * (PUBLISH would reach every node of the cluster), through every supported Cluster client,
 * after a slot moved, and with PUBLISH when an ACL user may not use sharded pub/sub.
 */
let cluster: RedisCluster;
const lockers: Locker[] = [];
const clients = clusterClientKinds(() => cluster);

/**
 * Far above a hand-off, so that a waiter acquiring sooner than half of it after a release
 * (the shortest pause a waiter that polls takes, see `retryDelay`) was woken by the release.
 */
const RETRY_DELAY_MS = 3_000;

beforeAll(async () => {
  // No replicas: a message a master sends to its replicas is not what this file counts.
  cluster = await startRedisCluster({ replicasPerMaster: 0 });
});
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  await clients.close();
});
afterAll(async () => {
  await cluster?.stop();
});

function lockerOn(client: RedisClient, options: Partial<LockerOptions> = {}): Locker {
  const locker = new Locker({ nodes: [client], retryDelayMs: RETRY_DELAY_MS, ...options });
  lockers.push(locker);
  return locker;
}

/** The sharded channels `master` has subscribers on. */
async function shardChannels(master: RedisServer): Promise<string[]> {
  const admin = new Redis(master.port);
  try {
    return (await admin.call('PUBSUB', 'SHARDCHANNELS', 'distlock:*')) as string[];
  } finally {
    admin.disconnect();
  }
}

/** A resource whose lock key `master` serves. */
function resourceOn(master: RedisServer, name: string): Promise<string> {
  return resourceWhere(cluster, (owner) => owner === master, name);
}

describe('wake-ups on a Redis Cluster', () => {
  it('reach the shard of the lock only, not every master', async () => {
    const masters = await cluster.masters();
    const [home] = masters as [RedisServer];
    const resource = await resourceOn(home, 'one-shard');
    const open = () => new Cluster([...cluster.startupNodes]);
    const holder = lockerOn(open());
    const waiter = lockerOn(open());
    await handOff(holder, waiter, resource, RETRY_DELAY_MS); // subscribed, scripts loaded
    const before = await busMessages(masters);
    const hops = 5;
    for (let i = 0; i < hops; i++) {
      expect(await handOff(holder, waiter, resource, RETRY_DELAY_MS)).toBeLessThan(
        RETRY_DELAY_MS / 2,
      );
    }
    const received = (await busMessages(masters)).map((after, i) => after - (before[i] ?? 0));
    // Before: PUBLISH, which the cluster bus carries to every other master, once a hand-off.
    expect(received).toEqual(masters.map(() => 0));
  });

  it.each(clients.kinds.map((kind) => [kind.name, kind] as const))(
    'wake the waiter through %s',
    async (_, kind) => {
      const [, second] = (await cluster.masters()) as [RedisServer, RedisServer];
      const resource = await resourceOn(second, kind.name.replace(/\W+/g, '-'));
      const holder = lockerOn(await kind.open());
      const waiter = lockerOn(await kind.open());
      expect(await handOff(holder, waiter, resource, RETRY_DELAY_MS)).toBeLessThan(
        RETRY_DELAY_MS / 2,
      );
      expect(await shardChannels(second)).toHaveLength(1); // the waiter's, on the slot's master
    },
  );

  it.each(clients.kinds.filter(({ name }) => /^(ioredis|node-redis 5)$/.test(name)))(
    'follow a slot that moves to another master ($name)',
    async (kind) => {
      const [from, to] = (await cluster.masters()) as [RedisServer, RedisServer];
      const resource = await resourceOn(from, `moving-${kind.name.replace(/\W+/g, '-')}`);
      const holder = lockerOn(await kind.open());
      const waiter = lockerOn(await kind.open());
      await handOff(holder, waiter, resource, RETRY_DELAY_MS); // subscribed on `from`
      await cluster.moveSlot(calculateSlot(`distlock:{${resource}}`), to);
      // The server ends the subscription as the slot leaves; the subscriber reads the slot
      // table again and subscribes on `to` (a subscribe that gets no answer gives up after
      // CONNECT_WAIT_MS, and tries again).
      await until(
        'the wake-up channel subscribed on the new master',
        async () =>
          (await shardChannels(to)).length > 0 ? { done: true } : { reason: 'not there' },
        3 * CONNECT_WAIT_MS,
      );
      expect(await shardChannels(from)).toEqual([]);
      // Before: the waiter was never woken again, and polled.
      expect(await handOff(holder, waiter, resource, RETRY_DELAY_MS)).toBeLessThan(
        RETRY_DELAY_MS / 2,
      );
    },
  );

  it.each([
    ['SSUBSCRIBE', '-ssubscribe'],
    ['SPUBLISH', '-spublish'],
  ])('fall back to PUBLISH for an ACL user without %s, and say so once', async (command, rule) => {
    const user = `no-${command.toLowerCase()}`;
    for (const node of cluster.nodes) {
      const admin = new Redis(node.port);
      await admin.call(
        'ACL',
        'SETUSER',
        user,
        'on',
        '>pw',
        '~distlock:*',
        '&distlock:*',
        '+@all',
        rule,
      );
      admin.disconnect();
    }
    const open = () =>
      new Cluster([...cluster.startupNodes], { redisOptions: { username: user, password: 'pw' } });
    const holder = lockerOn(open());
    const waiter = lockerOn(open());
    const warnings: string[] = [];
    waiter.events.on('warning', ({ code, message }) => warnings.push(`${code}: ${message}`));
    const [home] = (await cluster.masters()) as [RedisServer];
    const resource = await resourceOn(home, `acl-${command}`);
    await handOff(holder, waiter, resource, RETRY_DELAY_MS); // the refusal seen; from now on, PUBLISH
    expect(warnings).toEqual([
      expect.stringMatching(
        new RegExp(`^SHARDED_PUBSUB_UNAVAILABLE: .*refused ${command} .*NOPERM`),
      ),
    ]);
    // Before: sharded pub/sub stayed on, and the waiter was never woken.
    expect(await handOff(holder, waiter, resource, RETRY_DELAY_MS)).toBeLessThan(
      RETRY_DELAY_MS / 2,
    );
    expect(warnings).toHaveLength(1);
  });
});
