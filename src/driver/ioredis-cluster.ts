import calculateSlot from 'cluster-key-slot';
import { clusterNameOf, keyOf, redirectionMessage } from './cluster-routing.js';
import type { RedisConnection, Subscriber } from './connection.js';
import { IORedisConnection, type IORedisLike, OWNED_CLIENT_OPTIONS } from './ioredis.js';

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
  nodes(role: 'master'): readonly IORedisLike[];
  refreshSlotsCache(callback?: (error?: Error | null) => void): void;
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
 * asked of every master, so that the locker's checks (eviction policy) see each of them.
 */
export class IORedisClusterConnection implements RedisConnection {
  readonly name: string;
  readonly #cluster: IORedisClusterLike;
  readonly #connection: IORedisConnection;
  /** Per master client of the cluster, the connection that sends it commands. */
  readonly #members = new WeakMap<IORedisLike, IORedisConnection>();

  constructor(cluster: IORedisClusterLike) {
    this.name = clusterName(cluster);
    const redisOptions = { ...cluster.options.redisOptions, ...OWNED_CLIENT_OPTIONS };
    this.#cluster = cluster.duplicate([], { ...OWNED_CLUSTER_OPTIONS, redisOptions });
    // Waiting for readiness, keeping the real cause of failures and closing work as for one
    // node: a Cluster has the same statuses and events as a single client.
    this.#connection = new IORedisConnection(this.#cluster as unknown as IORedisLike, this.name);
  }

  /**
   * Sends a command with a key straight to the master that serves its slot (as far as the
   * slot table knows): ioredis's own routing may not find the key of every command (a
   * script's), and retries what it routed.
   */
  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    if (command === 'INFO') return this.#infoOfEveryMaster(timeoutMs);
    const master = this.#masterFor(command, args);
    const sent = master
      ? master.send(command, args, timeoutMs)
      : this.#connection.send(command, args, timeoutMs);
    return sent.catch((error: unknown) => {
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
    const slot = calculateSlot(String(key));
    return this.#cluster.slots[slot]?.[0] ?? `slot ${slot}`;
  }

  /** Waits for the cluster's slot table, then for the connections to its masters. */
  async connect(timeoutMs: number): Promise<void> {
    const started = performance.now();
    await this.#connection.connect(timeoutMs);
    const leftMs = Math.max(0, timeoutMs - (performance.now() - started));
    await Promise.all(this.#masters().map((master) => master.connect(leftMs)));
  }

  /**
   * A second cluster connection in subscriber mode: a release published on any master
   * reaches subscribers on every node of the cluster.
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

  close(): Promise<void> {
    return this.#connection.close();
  }

  /**
   * The INFO of every master that answers, one after the other (a master that does not is
   * left out: one dead shard must not keep the whole cluster from being identified).
   */
  async #infoOfEveryMaster(timeoutMs: number): Promise<string> {
    const masters = this.#masters();
    if (masters.length === 0) return String(await this.#connection.send('INFO', [], timeoutMs));
    const replies = await Promise.allSettled(masters.map((m) => m.send('INFO', [], timeoutMs)));
    const answered = replies.flatMap((r) => (r.status === 'fulfilled' ? [String(r.value)] : []));
    const failed = replies.find((r) => r.status === 'rejected');
    if (answered.length === 0 && failed) throw failed.reason;
    return answered.join('\r\n');
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
    const reply = error.message.replace(GAVE_UP, '');
    const message = redirectionMessage(reply);
    if (message === undefined) return error;
    this.#cluster.refreshSlotsCache();
    // No cause: ioredis's error carries the command, whose arguments hold the lock token.
    return new Error(message);
  }
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
