import type { Cluster, Redis } from 'ioredis';
import type { NodeSpec, TlsOptions } from '../config/node-specs.js';
import { ioredisLibrary } from '../driver/libraries.js';
import type { ClusterNode, NodeOptions, SentinelNode } from './node-options.js';

/** What a command's locker is given: its nodes and TLS settings, and how to let go of them. */
export interface LockerNodes {
  readonly nodes: readonly NodeSpec[];
  readonly tls?: TlsOptions;
  /** Closes the clients made here for clusters and Sentinel groups (after the locker's). */
  close(): void;
}

/**
 * The locker's nodes for `options`: the URLs as they are, and for each cluster or Sentinel
 * group an ioredis client that only describes it (it never connects: the locker opens
 * connections of its own from it). `--tls-*` go to the `rediss://` clusters, and to the
 * locker for its `rediss://` URLs (or when nothing else takes them, for the locker to refuse).
 */
export function lockerNodes(options: NodeOptions): LockerNodes {
  // Every command connects with ioredis: say so at once when it is missing.
  ioredisLibrary('to connect to Redis');
  const { tls } = options;
  const clusters = (options.clusters ?? []).map((cluster) => clusterClient(cluster, tls));
  const sentinels = (options.sentinels ?? []).map(sentinelClient);
  const clients = [...clusters, ...sentinels];
  const tlsTaken = options.clusters?.some((cluster) => cluster.tls) ?? false;
  const urlsNeedTls = options.nodes.some((url) => url.startsWith('rediss:'));
  return {
    nodes: [...options.nodes, ...clients],
    ...(tls && (urlsNeedTls || !tlsTaken) ? { tls } : {}),
    close: () => {
      for (const client of clients) client.disconnect();
    },
  };
}

function clusterClient(cluster: ClusterNode, tls: TlsOptions | undefined): Cluster {
  const { addresses, username, password } = cluster;
  const { Cluster } = ioredisLibrary('to connect to a Redis Cluster');
  return new Cluster(
    addresses.map(({ host, port }) => ({ host, port })),
    {
      lazyConnect: true,
      redisOptions: {
        ...(username ? { username } : {}),
        ...(password ? { password } : {}),
        ...(cluster.tls ? { tls: { ...tls } } : {}),
      },
    },
  );
}

function sentinelClient(group: SentinelNode): Redis {
  const { addresses, masterName, username, password } = group;
  const { Redis } = ioredisLibrary('to connect to a Sentinel group');
  return new Redis({
    sentinels: addresses.map(({ host, port }) => ({ host, port })),
    name: masterName,
    lazyConnect: true,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
  });
}
