import {
  type ClusterRoutes,
  clusterNameOf,
  keyOf,
  masterInfo,
  redirectionMessage,
  sendFollowing,
  slotRanges,
} from './cluster-routing.js';
import {
  NotSentError,
  onePerClient,
  type RedisConnection,
  readyWithin,
  type Subscriber,
} from './connection.js';
import { IORedisConnection, type IORedisLike, OWNED_CLIENT_OPTIONS } from './ioredis.js';
import { IORedisShardedSubscriber } from './ioredis-sharded-subscriber.js';
import { keySlot } from './libraries.js';

/** A startup node as ioredis takes it: a port, `host:port`, or `{ host, port }`. */
type StartupNode = number | string | { host?: string | undefined; port?: number | undefined };

/** The subset of an ioredis `Cluster` (v5+) that the adapter uses. */
export interface IORedisClusterLike {
  readonly isCluster: boolean;
  readonly status: string;
  readonly options: { readonly redisOptions?: object | undefined };
  /** Per slot, `host:port` of its master first. */
  readonly slots: readonly (readonly string[] | undefined)[];
  duplicate(startupNodes?: StartupNode[], options?: object): IORedisClusterLike;
  nodes(role: 'master' | 'all'): readonly IORedisLike[];
  refreshSlotsCache(callback?: (error?: Error | null) => void): void;
  /** 'refresh': the slot table was read again. */
  once(event: 'refresh', listener: () => void): unknown;
  on(event: 'refresh', listener: () => void): unknown;
  off(event: 'refresh', listener: () => void): unknown;
}

/** True when `value` looks like an ioredis `Cluster`. */
export function isIORedisClusterLike(value: unknown): value is IORedisClusterLike {
  const v = value as Partial<IORedisClusterLike> | null;
  return typeof v === 'object' && v !== null && v.isCluster === true && 'slots' in v;
}

/**
 * Cluster-level options of the cluster distlock opens from the caller's: a command goes to
 * the master of its slot once, and its failure (the shard is down, MOVED, ASK, TRYAGAIN,
 * CLUSTERDOWN) is reported, never retried later by ioredis: a `SET NX` re-sent after the
 * lock algorithm gave up on it would hold the key for its whole TTL with a token nobody has.
 * The adapter follows redirections itself, within each command's timeout (see `send`).
 */
const OWNED_CLUSTER_OPTIONS = {
  enableOfflineQueue: false,
  maxRedirections: 0,
  retryDelayOnFailover: 0,
  retryDelayOnClusterDown: 0,
  retryDelayOnTryAgain: 0,
};

/** ioredis's wording once it gives up on a redirection: the reply behind it is the cause. */
const GAVE_UP = /^Too many Cluster redirections\. Last error: (?:ReplyError: )?/;

/**
 * {@link RedisConnection} to a Redis Cluster, one lock service: each command goes to the
 * master of its key's slot. distlock opens its own cluster connections from the caller's
 * client (same startup nodes, credentials and TLS) with {@link OWNED_CLUSTER_OPTIONS}, and
 * closes them with the locker; the caller's client is left as it is.
 *
 * A stalled or failed shard delays only the keys it serves ({@link shardOf}). `INFO` is
 * asked of every master, so that the locker's checks (eviction policy) see each of them, and
 * {@link generation} changes when the slot table names other masters.
 */
export class IORedisClusterConnection implements RedisConnection {
  readonly name: string;
  readonly #cluster: IORedisClusterLike;
  readonly #connection: IORedisConnection;
  /** Whether {@link #cluster} was opened here (and so is closed here). */
  readonly #owned: boolean;
  /** Per master client of the cluster, the connection that sends it commands. */
  readonly #members = new WeakMap<IORedisLike, IORedisConnection>();
  /** The masters the slot table named when it was last read (`host:port`, sorted). */
  #mastersSeen = '';
  #generation = 0;

  /**
   * `owned` false: commands go over the caller's own cluster and its connections to the
   * masters, which are never closed here.
   */
  constructor(cluster: IORedisClusterLike, { owned = true } = {}) {
    this.name = clusterName(cluster);
    this.#owned = owned;
    const redisOptions = { ...cluster.options.redisOptions, ...OWNED_CLIENT_OPTIONS };
    this.#cluster = owned
      ? cluster.duplicate([], { ...OWNED_CLUSTER_OPTIONS, redisOptions })
      : cluster;
    // Waiting for readiness, keeping the real cause of failures and closing work as for one
    // node: a Cluster has the same statuses and events as a single client.
    this.#connection = new IORedisConnection(this.#cluster as unknown as IORedisLike, this.name, {
      routedByCluster: true,
    });
    this.#cluster.on('refresh', () => this.#slotTableRefreshed());
  }

  /**
   * Changes whenever the slot table, read again, names other masters than before (a replica
   * promoted, a master added or removed): the locker then reads their `INFO` again.
   */
  get generation(): number {
    return this.#generation;
  }

  /**
   * The connection for direct calls (fenced reads and writes) over the caller's own cluster:
   * routed and redirected as the locker's commands are, whatever redirections the caller's
   * options let ioredis follow.
   */
  static readonly ofCaller = onePerClient(
    (cluster: IORedisClusterLike) => new IORedisClusterConnection(cluster, { owned: false }),
  );

  /**
   * Sends a command with a key straight to the master that serves its slot (as far as the
   * slot table knows): ioredis's own routing may not find the key of every command (a
   * script's), and retries what it routed. A reshard is followed within `timeoutMs` (see
   * `sendFollowing`): to the new master on MOVED, with `ASKING` on ASK, again on TRYAGAIN.
   */
  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    if (command === 'INFO') return this.#infoOfEveryMaster(timeoutMs);
    const routes: ClusterRoutes = {
      routed: (leftMs) => {
        const via = this.#masterFor(command, args) ?? this.#connection;
        return via.send(command, args, leftMs).catch((error: unknown) => {
          throw gaveUpReply(error);
        });
      },
      moved: async (address, leftMs) => {
        const master = await this.#movedTo(address, leftMs);
        return master.send(command, args, leftMs);
      },
      asked: async (address, leftMs) => {
        const importing = this.#memberAt(address);
        if (!importing) throw this.#unknown(address, 'ASK');
        return importing.sendAsking(command, args, leftMs);
      },
    };
    return sendFollowing(routes, timeoutMs).catch((error: unknown) => {
      throw this.#redirectionReply(error);
    });
  }

  /**
   * The master (`host:port`) that serves the key of a command, for stall tracking per shard;
   * `undefined` for commands without a key.
   */
  shardOf(command: string, args: readonly (string | number)[]): string | undefined {
    const key = keyOf(command, args);
    if (key === undefined) return undefined;
    const slot = keySlot(String(key));
    return this.#cluster.slots[slot]?.[0] ?? `slot ${slot}`;
  }

  /** A connection to each master, once the slot table is known (see `RedisConnection`). */
  async masters(timeoutMs: number): Promise<readonly RedisConnection[]> {
    await this.#connection.connect(timeoutMs);
    return this.#masters();
  }

  /** Waits for the cluster's slot table, then for the connections to its masters. */
  async connect(timeoutMs: number): Promise<void> {
    const started = performance.now();
    await this.#connection.connect(timeoutMs);
    const leftMs = Math.max(0, timeoutMs - (performance.now() - started));
    await Promise.all(this.#masters().map((master) => master.connect(leftMs)));
  }

  /**
   * A second cluster connection in subscriber mode, for plain channels: a release published
   * with `PUBLISH` on any master reaches subscribers on every node of the cluster (used when
   * the cluster refuses sharded pub/sub).
   */
  openSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    const subscriber = this.#cluster.duplicate([], { enableOfflineQueue: true });
    type ClusterSubscriber = Parameters<typeof IORedisConnection.subscriberOver>[0];
    return IORedisConnection.subscriberOver(
      subscriber as unknown as ClusterSubscriber,
      onMessage,
      onReady,
    );
  }

  /**
   * Sharded subscriptions (see {@link IORedisShardedSubscriber}): a release's `SPUBLISH`
   * reaches only the master of its slot (and that master's replicas).
   */
  openShardedSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    return new IORedisShardedSubscriber(this.#cluster, onMessage, onReady);
  }

  async close(): Promise<void> {
    if (this.#owned) await this.#connection.close();
  }

  /**
   * The INFO of every master that answers, one after the other (a master that does not is
   * left out: one dead shard must not keep the whole cluster from being identified).
   */
  async #infoOfEveryMaster(timeoutMs: number): Promise<string> {
    const masters = this.#cluster.nodes('master');
    if (masters.length === 0) return String(await this.#connection.send('INFO', [], timeoutMs));
    const slots = slotRanges((slot) => this.#cluster.slots[slot]?.[0]);
    const replies = await Promise.allSettled(
      masters.map(async (client) => {
        const info = String(await this.#member(client).send('INFO', [], timeoutMs));
        return masterInfo(info, nodeKey(client), slots.get(nodeKey(client)));
      }),
    );
    const answered = replies.flatMap((r) => (r.status === 'fulfilled' ? [String(r.value)] : []));
    const failed = replies.find((r) => r.status === 'rejected');
    if (answered.length === 0 && failed) throw failed.reason;
    return answered.join('\r\n');
  }

  #slotTableRefreshed(): void {
    const masters = this.#cluster
      .nodes('master')
      .map((node) => nodeKey(node))
      .sort()
      .join(',');
    if (masters === this.#mastersSeen) return;
    if (this.#mastersSeen !== '') this.#generation++;
    this.#mastersSeen = masters;
  }

  /** A connection to each master the slot table knows. */
  #masters(): IORedisConnection[] {
    return this.#cluster.nodes('master').map((client) => this.#member(client));
  }

  /** The connection to the master of the command's slot, once the slot table is known. */
  #masterFor(command: string, args: readonly (string | number)[]): IORedisConnection | undefined {
    const shard = this.shardOf(command, args);
    if (shard === undefined) return undefined;
    const client = this.#cluster.nodes('master').find((node) => nodeKey(node) === shard);
    return client && this.#member(client);
  }

  /** The connection to the node at `address` (`host:port`), if the cluster knows it. */
  #memberAt(address: string): IORedisConnection | undefined {
    const client = this.#cluster.nodes('all').find((node) => nodeKey(node) === address);
    return client && this.#member(client);
  }

  /**
   * The master at `address`, which a MOVED named: the slot table is read again, and waited
   * for (up to `timeoutMs`) only when it did not know that master yet.
   */
  async #movedTo(address: string, timeoutMs: number): Promise<IORedisConnection> {
    const known = this.#memberAt(address);
    if (known) {
      this.#cluster.refreshSlotsCache();
      return known;
    }
    await this.#slotTableRead(timeoutMs);
    const master = this.#memberAt(address);
    if (!master) throw this.#unknown(address, 'MOVED');
    return master;
  }

  /** Reads the slot table again; resolves once it was read, or after `timeoutMs`. */
  #slotTableRead(timeoutMs: number): Promise<boolean> {
    let onRefresh = () => {};
    const read = new Promise<boolean>((resolve) => {
      onRefresh = () => resolve(true);
      this.#cluster.once('refresh', onRefresh);
    });
    this.#cluster.refreshSlotsCache();
    return readyWithin(read, timeoutMs).finally(() => this.#cluster.off('refresh', onRefresh));
  }

  /** A redirection to a node the cluster does not know (not even after reading its slots). */
  #unknown(address: string, redirection: 'MOVED' | 'ASK'): NotSentError {
    return new NotSentError(
      `${this.name} has no connection to ${address}, named by ${redirection}; nothing sent`,
    );
  }

  #member(client: IORedisLike): IORedisConnection {
    let member = this.#members.get(client);
    if (!member) {
      const name = `${this.name} (${nodeKey(client)})`;
      member = new IORedisConnection(client, name, { clusterMember: true });
      this.#members.set(client, member);
    }
    return member;
  }

  /** A redirection (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) as the reply that said it. */
  #redirectionReply(error: unknown): unknown {
    if (!(error instanceof Error)) return error;
    const message = redirectionMessage(error.message);
    if (message === undefined) return error;
    this.#cluster.refreshSlotsCache();
    // No cause: ioredis's error carries the command, whose arguments hold the lock token.
    return new Error(message);
  }
}

/**
 * The reply behind ioredis's "Too many Cluster redirections" (it follows none for distlock's
 * own cluster), as the server said it; any other error as it is.
 */
function gaveUpReply(error: unknown): unknown {
  if (!(error instanceof Error) || !GAVE_UP.test(error.message)) return error;
  // No cause: ioredis's error carries the command, whose arguments hold the lock token.
  return new Error(error.message.replace(GAVE_UP, ''));
}

/** `host:port` of a cluster's master client, as the slot table names it. */
function nodeKey(node: IORedisLike): string {
  return `${node.options.host}:${node.options.port}`;
}

/** `cluster 127.0.0.1:7000,127.0.0.1:7001`: the startup nodes name the cluster. */
export function clusterName(cluster: IORedisClusterLike): string {
  const startup = (cluster as unknown as { startupNodes?: StartupNode[] }).startupNodes ?? [];
  const names = startup.map((node) => {
    if (typeof node === 'number') return `127.0.0.1:${node}`;
    if (typeof node === 'string') return node.replace(/^redis:\/\//, '');
    return `${node.host ?? '127.0.0.1'}:${node.port ?? 6379}`;
  });
  return clusterNameOf(names);
}
