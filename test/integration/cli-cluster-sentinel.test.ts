import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Locker } from '../../src/index.js';
import {
  type RedisCluster,
  type RedisSentinelGroup,
  startRedisCluster,
  startRedisSentinel,
} from '../../src/testing/index.js';
import { until } from '../../src/testing/until.js';
import { CLI, distlock } from '../support/cli.js';
import { resourceWhere } from '../support/cluster-keys.js';

/**
 * `distlock status`, `break`, `run` and `cron` on a Redis Cluster (`--cluster`) and on a
 * master that Sentinel follows (`--sentinel`, `--master-name`), and their environment
 * variables, on real servers.
 */
let cluster: RedisCluster;
let group: RedisSentinelGroup;
let clusterClient: Cluster;
let sentinelClient: Redis;
let onCluster: Locker;
let onSentinel: Locker;
/** Every seed of the cluster, as `--cluster` takes them. */
let seeds: string;
/** Every sentinel, as `--sentinel` takes them. */
let sentinels: string;

beforeAll(async () => {
  [cluster, group] = await Promise.all([
    startRedisCluster({ replicasPerMaster: 0 }),
    startRedisSentinel({ masterName: 'orders', replicas: 0, sentinels: 1 }),
  ]);
  clusterClient = new Cluster([...cluster.startupNodes]);
  sentinelClient = new Redis({ sentinels: [...group.sentinelAddresses], name: 'orders' });
  onCluster = new Locker({ nodes: [clusterClient] });
  onSentinel = new Locker({ nodes: [sentinelClient] });
  seeds = cluster.startupNodes.map(({ host, port }) => `redis://${host}:${port}`).join(',');
  sentinels = group.sentinelAddresses.map(({ host, port }) => `${host}:${port}`).join(',');
});
afterAll(async () => {
  await Promise.all([onCluster?.close(), onSentinel?.close()]);
  clusterClient?.disconnect();
  sentinelClient?.disconnect();
  await Promise.all([cluster?.stop(), group?.stop()]);
});

/** A resource whose lock key lives on another master than the first seed. */
function awayFromFirstSeed(): Promise<string> {
  const first = cluster.startupNodes[0]?.port;
  return resourceWhere(cluster, (owner) => owner.port !== first, 'job-');
}

describe('--cluster', () => {
  it('reads and breaks a lock on any shard; one node of the cluster as --redis cannot', async () => {
    const resource = await awayFromFirstSeed();
    const lock = await onCluster.acquire(resource, { ttlMs: 30_000, fencing: true });
    const [firstSeed] = seeds.split(',') as [string];
    // Before --cluster, the only way: the seed answers MOVED, and status exits 69.
    const oneNode = await distlock(['status', resource, '--redis', firstSeed]).done;
    expect(oneNode.code).toBe(69);
    expect(oneNode.stdout).toMatch(/is a Redis Cluster node .*pass a Cluster client/);

    const held = await distlock(['status', resource, '--cluster', seeds]).done;
    expect(held.stdout).toMatch(
      new RegExp(
        `^${resource}: held \\(locked on 1 of 1 node\\(s\\)\\), by [^\\n]+\\n  cluster 127\\.0\\.0\\.1:\\d+,.*held, \\d+ ms left, fence 1`,
      ),
    );
    expect(held.code).toBe(0);
    // One seed is enough to find the rest, as with a Cluster client.
    const fromOneSeed = await distlock(['status', resource, '--json', '--cluster', firstSeed]).done;
    // A fence follows the node's clock (docs/fencing.md): a positive integer, not 1.
    expect(JSON.parse(fromOneSeed.stdout)).toMatchObject({
      state: 'held',
      fence: expect.stringMatching(/^[1-9]\d*$/),
    });

    const broken = await distlock(['break', resource, '--yes', '--cluster', seeds]).done;
    expect(broken.stdout).toMatch(
      new RegExp(`^${resource}: broken \\(deleted on 1 of 1 node\\(s\\)\\)`),
    );
    expect(broken.code).toBe(0);
    expect(await clusterClient.exists(`distlock:{${resource}}`)).toBe(0);
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });
    const free = await distlock(['status', resource], { DISTLOCK_CLUSTER: seeds }).done;
    expect(free.stdout).toMatch(new RegExp(`^${resource}: free`));
    expect(free.code).toBe(1);
  });

  it('is where run and cron take their locks too', async () => {
    const resource = await awayFromFirstSeed();
    // The command reads the lock it runs under: exit 0 when held.
    const status = [CLI, 'status', resource, '--cluster', seeds];
    const run = await distlock(['run', '--cluster', seeds, resource, '--', 'node', ...status]).done;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(await clusterClient.exists(`distlock:{${resource}}`)).toBe(0); // released after

    const cron = distlock(
      ['cron', '* * * * * *', '--key', resource, '--at-least', '0', '--', 'sleep', '30'],
      { DISTLOCK_CLUSTER: seeds },
    );
    const tick = `distlock:{schedule:${resource}}`;
    // The first tick is within a second; 10 s is room for a busy machine.
    await until(
      `${tick} held`,
      async () => ((await clusterClient.exists(tick)) === 1 ? { done: true } : { reason: 'free' }),
      10_000,
    );
    // The tick is labelled with its host, pid and command.
    const tickStatus = await distlock(['status', '--cron', resource, '--json', '--cluster', seeds])
      .done;
    expect(JSON.parse(tickStatus.stdout).owner).toMatch(new RegExp(`:${cron.child.pid} sleep 30$`));
    cron.child.kill('SIGTERM');
    expect((await cron.done).code).toBe(143);
    expect(await clusterClient.exists(tick)).toBe(0);
  });
});

describe('distlock ls on a Cluster and through Sentinel', () => {
  it('lists the locks of every master of a Cluster', async () => {
    const masters = await cluster.masters();
    const resources = await Promise.all(
      masters.map((master) => resourceWhere(cluster, (owner) => owner === master, 'ls-')),
    );
    const locks = await Promise.all(resources.map((r) => onCluster.acquire(r, { ttlMs: 30_000 })));
    const shown = await distlock(['ls', 'ls-*', '--json', '--cluster', seeds]).done;
    expect(shown.code).toBe(0);
    const names = shown.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line).name);
    expect(names).toEqual([...resources].sort());
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('lists the locks on the master the sentinels name', async () => {
    const lock = await onSentinel.acquire('ls-report', { ttlMs: 30_000, owner: 'sentinel-side' });
    const args = ['--sentinel', sentinels, '--master-name', 'orders'];
    const shown = await distlock(['ls', 'ls-*', ...args]).done;
    expect(shown.stdout).toMatch(
      /^lock ls-report +held by sentinel-side since \S+Z, \d+ ms left\n1 held or waited for\n$/,
    );
    expect(shown.code).toBe(0);
    await lock.release();
  });
});

describe('--sentinel', () => {
  it('reads and breaks the lock on the master the sentinels name', async () => {
    const lock = await onSentinel.acquire('report', { ttlMs: 30_000 });
    const args = ['--sentinel', sentinels, '--master-name', 'orders'];
    const held = await distlock(['status', 'report', ...args]).done;
    expect(held.stdout).toMatch(
      /^report: held \(locked on 1 of 1 node\(s\)\), by [^\n]+\n {2}sentinel orders \(127\.0\.0\.1:\d+\) {2}held, \d+ ms left/,
    );
    expect(held.code).toBe(0);
    const env = { DISTLOCK_SENTINEL: sentinels, DISTLOCK_MASTER_NAME: 'orders' };
    const fromEnv = await distlock(['break', 'report', '--yes', '--json'], env).done;
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ resource: 'report', result: 'released' });
    expect(fromEnv.code).toBe(0);
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });

    const run = await distlock([
      'run',
      ...args,
      'report',
      '--',
      'node',
      CLI,
      'status',
      'report',
      ...args,
    ]).done;
    expect(run.code).toBe(0);
  });
});

describe('bad node options', () => {
  it.each([
    [['--cluster', 'redis://127.0.0.1:notaport'], /`--cluster` to be comma-separated addresses/],
    [['--cluster', 'redis://127.0.0.1:1,'], /`--cluster` to be comma-separated/],
    [
      ['--cluster', 'redis://127.0.0.1:1,rediss://127.0.0.1:2'],
      /`--cluster` to be .*, all with the same scheme, got `"redis:\/\/127.0.0.1:1,rediss/,
    ],
    [['--cluster', 'redis://u:secret@127.0.0.1:1/2'], /`--cluster` .*got `"redis:\/\/u:\*\*\*@/],
    [['--redis', 'redis://127.0.0.1:1', '--cluster', 'foo://x'], /`--cluster` to be/],
    [['--sentinel', '127.0.0.1:1'], /`--master-name` to be given with --sentinel/],
    [['--sentinel', 'rediss://127.0.0.1:1', '--master-name', 'm'], /TLS to sentinels/],
    [['--master-name', 'm'], /`--master-name` to be given only with --sentinel/],
    [
      ['--cluster', 'redis://127.0.0.1:1', '--cluster', '127.0.0.1:1'],
      /`--cluster` to be a node not listed before \(same as --cluster #1/,
    ],
  ])('%j exits 2 naming the option, at once', async (args, message) => {
    const startedAt = performance.now();
    const { code, stderr } = await distlock(['status', 'k', ...args]).done;
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(/secret/);
    expect(code).toBe(2);
    expect(performance.now() - startedAt).toBeLessThan(10_000); // no connection attempted
  });

  it('names the variable a bad entry came from', async () => {
    const env = { DISTLOCK_CLUSTER: 'redis://127.0.0.1:1 foo://x' };
    const { code, stderr } = await distlock(['break', 'k'], env).done;
    expect(stderr).toMatch(/`\$DISTLOCK_CLUSTER entry 2` to be comma-separated/);
    expect(code).toBe(2);
  });
});
