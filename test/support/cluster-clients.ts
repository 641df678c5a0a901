import { GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { Cluster, Redis } from 'ioredis';
import { Cluster as Cluster6 } from 'ioredis6';
import { Cluster as ValkeyCluster } from 'iovalkey';
import { createCluster as createNodeRedisCluster5 } from 'redis';
import { createCluster as createNodeRedisCluster6 } from 'redis6';
import type { RedisClient } from '../../src/index.js';
import type { RedisCluster } from '../../src/testing/index.js';

/** A caller's Cluster client of one library, connected; `close()` closes what it opened. */
export interface ClusterClientKind {
  readonly name: string;
  /**
   * Opens a client on the cluster. `follows: false`: the client is told not to follow
   * redirections itself, where it can be (valkey-glide always does).
   */
  open(options?: { follows: boolean }): Promise<RedisClient>;
  /**
   * Whether a command that got TRYAGAIN is sent again within the node timeout. valkey-glide
   * follows redirections itself and holds such a command for about 1.3 s before it tries
   * again, past the requestTimeout (250 ms at most) of the client distlock opens from it.
   */
  readonly retriesTryAgain: boolean;
}

Logger.setLoggerConfig('off'); // valkey-glide logs every error reply the tests provoke

/**
 * Every Cluster client distlock supports, on `cluster()` (read when a client is opened), with
 * the library's defaults unless told: ioredis (5), ioredis 6, iovalkey, node-redis 5 and 6
 * (RESP3), valkey-glide. What they open is closed by `close()`.
 */
export function clusterClientKinds(cluster: () => RedisCluster): {
  readonly kinds: readonly ClusterClientKind[];
  close(): Promise<void>;
} {
  const closers: (() => unknown)[] = [];
  const rootNodes = () =>
    cluster().startupNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` }));
  const kinds: ClusterClientKind[] = [
    {
      name: 'ioredis',
      retriesTryAgain: true,
      async open({ follows } = { follows: true }) {
        const options = follows ? {} : { maxRedirections: 0 };
        const client = new Cluster([...cluster().startupNodes], options);
        client.on('error', () => {});
        closers.push(() => client.disconnect());
        return client;
      },
    },
    {
      name: 'ioredis 6',
      retriesTryAgain: true,
      async open({ follows } = { follows: true }) {
        const options = follows ? {} : { maxRedirections: 0 };
        const client = new Cluster6([...cluster().startupNodes], options);
        client.on('error', () => {});
        closers.push(() => client.disconnect());
        return client;
      },
    },
    {
      name: 'iovalkey',
      retriesTryAgain: true,
      async open({ follows } = { follows: true }) {
        const options = follows ? {} : { maxRedirections: 0 };
        const client = new ValkeyCluster([...cluster().startupNodes], options);
        client.on('error', () => {});
        closers.push(() => client.disconnect());
        return client;
      },
    },
    {
      name: 'node-redis 5',
      retriesTryAgain: true,
      async open({ follows } = { follows: true }) {
        // By default it queues while a node is down and follows 16 redirections.
        const redirections = follows ? {} : { maxCommandRedirections: 0 };
        const client = createNodeRedisCluster5({ rootNodes: rootNodes(), ...redirections });
        client.on('error', () => {});
        closers.push(() => client.destroy());
        return client.connect();
      },
    },
    {
      name: 'node-redis 6 (RESP3)',
      retriesTryAgain: true,
      async open({ follows } = { follows: true }) {
        const redirections = follows ? {} : { maxCommandRedirections: 0 };
        const client = createNodeRedisCluster6({ rootNodes: rootNodes(), ...redirections });
        client.on('error', () => {});
        closers.push(() => client.destroy());
        return client.connect();
      },
    },
    {
      name: 'valkey-glide',
      retriesTryAgain: false,
      async open() {
        const addresses = cluster().startupNodes.map(({ host, port }) => ({ host, port }));
        // Its requestTimeout is valkey-glide's budget for retrying a command on a new master.
        const client = await GlideClusterClient.createClient({ addresses, requestTimeout: 5_000 });
        closers.push(() => client.close());
        return client;
      },
    },
  ];
  return {
    kinds,
    async close() {
      for (const close of closers.splice(0)) await close();
    },
  };
}

/**
 * Hands the (empty) slot of `key` from the first master of `masters` to the second, behind
 * the clients' backs: they still send its commands to the first, which answers MOVED.
 * Resolves to the slot.
 */
export async function handSlotOver(masters: readonly { port: number }[], key: string) {
  const admins = masters.map((node) => new Redis(node.port, '127.0.0.1'));
  try {
    const slot = await admins[0]?.call('CLUSTER', 'KEYSLOT', key);
    const target = await admins[1]?.call('CLUSTER', 'MYID');
    const setOwner = ['SETSLOT', String(slot), 'NODE', String(target)];
    // The new owner first, with a config epoch above every other: its claim then wins in
    // gossip, also at replicas nobody told and at a master that restarts (Valkey 8 does not
    // bump the epoch for a slot given without IMPORTING, and would keep both claims).
    await admins[1]?.call('CLUSTER', ...setOwner);
    await admins[1]?.call('CLUSTER', 'BUMPEPOCH');
    await Promise.all(admins.map((admin) => admin.call('CLUSTER', ...setOwner)));
    return slot;
  } finally {
    for (const admin of admins) admin.disconnect();
  }
}
