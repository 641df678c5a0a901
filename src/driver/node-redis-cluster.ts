import {
  type ClusterRoutes,
  clusterNameOf,
  keyOf,
  masterInfo,
  needsSlotRefresh,
  redirectionMessage,
  sendFollowing,
  slotRanges,
  WAIT_UNSUPPORTED,
} from './cluster-routing.js';
import {
  NotSentError,
  onePerClient,
  type RedisConnection,
  readyWithin,
  type Subscriber,
} from './connection.js';
import { keySlot } from './libraries.js';
import { RESP2_SHAPES } from './node-redis.js';
import { type ClusterPubSub, NodeRedisClusterSubscriber } from './node-redis-cluster-subscriber.js';

/** A node as node-redis's cluster events name it. */
interface NodeAddress {
  readonly host: string;
  readonly port: number;
}

/** How a node-redis client is told where to connect: `{ url }` or `{ socket }`. */
interface NodeRedisAddress {
  readonly url?: string | undefined;
  readonly socket?:
    | {
        readonly host?: string | undefined;
        readonly port?: number | undefined;
        readonly path?: string | undefined;
      }
    | undefined;
}

/** What the adapter passes with each command (node-redis's `CommandOptions`). */
interface NodeRedisCommandOptions {
  /** How replies are decoded, by RESP type byte. */
  typeMapping?: Readonly<Record<number, unknown>>;
  /** Commands of one chain are written together, nothing of another between them. */
  chainId?: symbol;
}

/**
 * The subset of a node-redis cluster (the `redis` package, v5 and v6: what `createCluster()`
 * returns) that the adapter uses. Structural: distlock does not depend on node-redis.
 */
export interface NodeRedisClusterLike {
  readonly isOpen: boolean;
  /** The options it was created with: `rootNodes` name it, `defaults` apply to every node. */
  readonly _options: {
    readonly rootNodes: readonly NodeRedisAddress[];
    readonly defaults?: object | undefined;
  };
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
    options?: NodeRedisCommandOptions,
  ): Promise<unknown>;
  /** A new, unconnected cluster with the same options, `overrides` applied. */
  duplicate(overrides?: object): NodeRedisClusterLike;
  nodeClient(node: never): Promise<unknown>;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** A client node-redis opened to one master of the cluster. */
interface MemberClient {
  /** Where it connects: node-redis refreshes the slot table from it. */
  readonly options?: object | undefined;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(args: readonly string[], options?: NodeRedisCommandOptions): Promise<unknown>;
  destroy(): void;
}

/** A master as node-redis's slot table holds it. */
interface MasterNode {
  readonly address: string;
  readonly client?: MemberClient;
  /** Set while its client makes its first connection. */
  readonly connectPromise?: Promise<unknown>;
}

/** What the adapter reads of the cluster it opened itself, beyond {@link NodeRedisClusterLike}. */
interface OwnedCluster extends NodeRedisClusterLike, ClusterPubSub {
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'node-error', listener: (error: Error, node: NodeAddress) => void): unknown;
  on(event: 'node-ready', listener: (node: NodeAddress) => void): unknown;
  readonly slots: readonly ({ readonly master: MasterNode } | undefined)[];
  readonly masters: readonly MasterNode[];
}

/** True when `value` looks like a node-redis cluster (`createCluster()`). */
export function isNodeRedisClusterLike(value: unknown): value is NodeRedisClusterLike {
  const v = value as Partial<NodeRedisClusterLike> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.sendCommand === 'function' &&
    typeof v.nodeClient === 'function' &&
    Array.isArray(v._options?.rootNodes)
  );
}

/**
 * Options of the cluster distlock opens from the caller's: a command goes to the master of its
 * slot once, and is never queued while that master's connection is down (node-redis then
 * rejects it, and drops the unwritten ones when a connection fails), nor followed to another
 * master on MOVED or ASK by node-redis (the adapter follows them itself, within the command's
 * timeout). Replicas are not connected: locks live on masters.
 */
function ownedOptions(caller: NodeRedisClusterLike): object {
  const defaults = caller._options.defaults ?? {};
  return {
    maxCommandRedirections: 0,
    minimizeConnections: false,
    useReplicas: false,
    defaults: { ...defaults, disableOfflineQueue: true },
  };
}

/** node-redis's errors for a command it refused to queue: it was not sent. */
const REFUSED = new Set(['ClientOfflineError', 'ClientClosedError']);

/** How long `close()` lets the masters answer before their connections are dropped. */
const CLOSE_TIMEOUT_MS = 500;

/**
 * {@link RedisConnection} over a node-redis 5 or 6 Redis Cluster, one lock service: each
 * command goes to the master of its key's slot. distlock opens its own cluster from the
 * caller's (`duplicate`, so the same root nodes, credentials and TLS) with
 * {@link ownedOptions}, and closes it with the locker; the caller's cluster is left as it is.
 *
 * A command is written only to a master whose connection is ready (it waits up to `timeoutMs`
 * for one still being opened), and never re-sent after a failure. A reshard is followed
 * within `timeoutMs` (see `sendFollowing`): to the new master on MOVED, with `ASKING` on ASK,
 * again on TRYAGAIN. A failure, or a redirection still reported (CLUSTERDOWN, say), refreshes
 * the slot table, so that the next attempt asks the slot's current master. node-redis
 * refreshes it only on MOVED by itself, and so would not notice a replica promoted in place
 * of a dead master.
 */
export class NodeRedisClusterConnection implements RedisConnection {
  readonly name: string;
  readonly #caller: NodeRedisClusterLike;
  readonly #cluster: OwnedCluster;
  /** Whether {@link #cluster} was opened here (and so is closed here), or is the caller's. */
  readonly #owned: boolean;
  /** Settles true once the slot table is known; false if no root node answered. */
  #opening: Promise<boolean> | undefined;
  #opened = false;
  #closed = false;
  /** Why the slot table could not be read last: the cause of NotSent before it is known. */
  #lastError: Error | undefined;
  /** Per master (`host:port`), why its connection failed last; cleared once it is ready. */
  readonly #masterErrors = new Map<string, Error>();
  #refreshing: Promise<void> | undefined;
  /** The list of masters node-redis made when it last read the slot table, and their names. */
  #mastersSeen: { readonly list: readonly MasterNode[]; readonly addresses: string } | undefined;
  #generation = 0;

  /**
   * `owned` false: commands go over the caller's own cluster, already connected, and its
   * connections to the masters, which are never closed here.
   */
  constructor(caller: NodeRedisClusterLike, { owned = true } = {}) {
    this.name = nodeRedisClusterName(caller);
    this.#caller = caller;
    this.#owned = owned;
    if (!owned) {
      this.#cluster = caller as OwnedCluster;
      this.#opened = true; // the caller opened it; a closed one refuses each command
      return;
    }
    this.#cluster = caller.duplicate(ownedOptions(caller)) as OwnedCluster;
    // node-redis throws an 'error' nobody listens for; they reach callers as failed votes.
    this.#cluster.on('error', (error: Error) => {
      this.#lastError = error;
    });
    this.#cluster.on('node-error', (error: Error, node: NodeAddress) => {
      this.#masterErrors.set(`${node.host}:${node.port}`, error);
    });
    this.#cluster.on('node-ready', (node: NodeAddress) => {
      this.#masterErrors.delete(`${node.host}:${node.port}`);
    });
    void this.#open();
  }

  /**
   * The connection for direct calls (fenced reads and writes) over the caller's own cluster:
   * routed and redirected as the locker's commands are, whatever redirections the caller's
   * options let node-redis follow.
   */
  static readonly ofCaller = onePerClient(
    (cluster: NodeRedisClusterLike) => new NodeRedisClusterConnection(cluster, { owned: false }),
  );

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    if (command === 'INFO') return this.#infoOfEveryMaster(timeoutMs);
    if (command === 'WAIT') return Promise.reject(new Error(WAIT_UNSUPPORTED));
    const argv = [command, ...args.map(String)];
    const routes: ClusterRoutes = {
      routed: async (leftMs) => {
        await this.#topology(leftMs);
        return this.#sendTo(this.#masterFor(command, args), argv, leftMs);
      },
      moved: async (address, leftMs) =>
        this.#sendTo(await this.#movedTo(address, leftMs), argv, leftMs),
      asked: async (address, leftMs) => {
        const importing = this.#masterAt(address);
        if (!importing) throw this.#notSent(`${address}, named by ASK, is unknown`, undefined);
        return this.#sendTo(importing, argv, leftMs, { asking: true });
      },
    };
    return sendFollowing(routes, timeoutMs).catch((error: unknown) => {
      throw this.#reported(error);
    });
  }

  /**
   * Changes whenever the slot table, read again, names other masters than before (a replica
   * promoted, a master added or removed): the locker then reads their `INFO` again. Cheap:
   * node-redis makes a new list of masters each time it reads the slot table.
   */
  get generation(): number {
    const list = this.#cluster.masters;
    if (list === this.#mastersSeen?.list) return this.#generation;
    const addresses = list
      .map((master) => master.address)
      .sort()
      .join(',');
    if (this.#mastersSeen && addresses !== this.#mastersSeen.addresses) this.#generation++;
    this.#mastersSeen = { list, addresses };
    return this.#generation;
  }

  /** The master (`host:port`) that serves the key of a command, for stall tracking per shard. */
  shardOf(command: string, args: readonly (string | number)[]): string | undefined {
    const key = keyOf(command, args);
    if (key === undefined) return undefined;
    const slot = keySlot(key);
    return this.#cluster.slots[slot]?.master.address ?? `slot ${slot}`;
  }

  async connect(timeoutMs: number): Promise<void> {
    await this.#topology(timeoutMs).catch(() => undefined);
  }

  /**
   * A second cluster, made with the caller's options, for pub/sub: a release published on any
   * master reaches subscribers on every node. node-redis subscribes again by itself after its
   * pub/sub connection comes back; `onReady` follows each time the cluster is opened.
   */
  openSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    return new NodeRedisClusterSubscriber(this.#caller, 'plain', onMessage, onReady);
  }

  /**
   * The same, for sharded channels (`sSubscribe`, node-redis 5+): node-redis subscribes on
   * the master of each channel's slot, and follows the slot when the server says it moved.
   */
  openShardedSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    return new NodeRedisClusterSubscriber(this.#caller, 'sharded', onMessage, onReady);
  }

  /** Lets the masters answer pending commands, but never waits on a stuck one for long. */
  async close(): Promise<void> {
    if (!this.#owned) return;
    this.#closed = true;
    // node-redis forgets its masters as soon as the close begins.
    const clients = this.#cluster.masters.flatMap((master) => master.client ?? []);
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
      timer.unref();
    });
    await Promise.race([this.#cluster.close().catch(() => undefined), stuck]);
    clearTimeout(timer);
    for (const client of clients) if (client.isOpen) client.destroy();
  }

  #open(): Promise<boolean> {
    this.#opening ??= this.#cluster.connect().then(
      () => {
        // Closed while node-redis was still connecting to the masters it found.
        if (this.#closed) this.#cluster.destroy();
        this.#opened = true;
        return true;
      },
      (error: unknown) => {
        if (error instanceof Error) this.#lastError = error;
        this.#opening = undefined; // the next command tries again
        return false;
      },
    );
    return this.#opening;
  }

  /** Resolves once the slot table is known; NotSent after `timeoutMs` or when closed. */
  async #topology(timeoutMs: number): Promise<void> {
    if (this.#opened && !this.#closed) return;
    const opened = !this.#closed && (await readyWithin(this.#open(), timeoutMs));
    if (this.#closed) throw this.#notSent('closed', undefined);
    if (!opened) throw this.#notSent('no root node answered yet', this.#lastError);
  }

  /** The master that serves the command's key (any master for a command without one). */
  #masterFor(command: string, args: readonly (string | number)[]): MasterNode {
    const key = keyOf(command, args);
    const slot = key === undefined ? undefined : keySlot(key);
    const master =
      slot === undefined ? this.#cluster.masters[0] : this.#cluster.slots[slot]?.master;
    if (!master) throw this.#notSent(`no master serves slot ${slot}`, this.#lastError);
    return master;
  }

  /** The master at `address` (`host:port`), as the slot table last read names it. */
  #masterAt(address: string): MasterNode | undefined {
    return this.#cluster.masters.find((master) => master.address === address);
  }

  /**
   * The master at `address`, which a MOVED named: the slot table is read again, and waited
   * for (up to `timeoutMs`) only when it did not know that master yet.
   */
  async #movedTo(address: string, timeoutMs: number): Promise<MasterNode> {
    const refreshed = this.#refreshSlots();
    const known = this.#masterAt(address);
    if (known) return known;
    if (refreshed)
      await readyWithin(
        refreshed.then(() => true),
        timeoutMs,
      );
    const master = this.#masterAt(address);
    if (!master) throw this.#notSent(`${address}, named by MOVED, is unknown`, undefined);
    return master;
  }

  /**
   * Writes to `master` once its connection is ready: one still being opened is waited for up
   * to `timeoutMs`; one that is reconnecting fails at once (its master may be gone). `asking`:
   * `ASKING` goes first, with nothing between it and the command (see `ClusterRoutes.asked`).
   */
  async #sendTo(
    master: MasterNode,
    argv: string[],
    timeoutMs: number,
    { asking = false } = {},
  ): Promise<unknown> {
    // A caller's cluster may connect to a master only once a command is for it.
    const connecting =
      master.connectPromise ??
      (master.client ? undefined : this.#cluster.nodeClient(master as never));
    if (!master.client?.isReady && connecting) {
      const settled = connecting.then(
        () => true,
        () => false,
      );
      await readyWithin(settled, timeoutMs);
    }
    const client = master.client;
    const down = () =>
      this.#notSent(`${master.address} is not connected`, this.#masterErrors.get(master.address));
    if (!client?.isReady) throw down();
    const chainId = asking ? Symbol('asking') : undefined;
    if (chainId) client.sendCommand(['ASKING'], { chainId }).catch(() => undefined); // see reply
    const options = chainId
      ? { typeMapping: RESP2_SHAPES, chainId }
      : { typeMapping: RESP2_SHAPES };
    return client.sendCommand(argv, options).catch((error: unknown) => {
      // Refused before it was queued (the connection dropped meanwhile): not sent.
      const refused = error instanceof Error && REFUSED.has(error.constructor.name);
      throw refused ? down() : error;
    });
  }

  /** A connection to each master, once the slot table is known (see `RedisConnection`). */
  async masters(timeoutMs: number): Promise<readonly RedisConnection[]> {
    await this.#topology(timeoutMs);
    return this.#cluster.masters.map((master) => ({
      name: master.address,
      send: (command, args, leftMs) => this.#sendTo(master, [command, ...args.map(String)], leftMs),
      close: async () => undefined,
    }));
  }

  async #infoOfEveryMaster(timeoutMs: number): Promise<string> {
    await this.#topology(timeoutMs);
    const masters = this.#cluster.masters;
    const slots = slotRanges((slot) => this.#cluster.slots[slot]?.master.address);
    const replies = await Promise.all(
      masters.map(async (master) => {
        const info = String(await this.#sendTo(master, ['INFO'], timeoutMs));
        return masterInfo(info, master.address, slots.get(master.address));
      }),
    );
    return replies.map(String).join('\r\n');
  }

  /**
   * The error to report for a failed command. A redirection is reworded as the reply that
   * said it; it, or a master that did not answer (not connected, connection lost), triggers a
   * refresh of the slot table.
   */
  #reported(error: unknown): unknown {
    if (needsSlotRefresh(error)) this.#refreshSlots();
    const redirection = error instanceof Error ? redirectionMessage(error.message) : undefined;
    return redirection === undefined ? error : new Error(redirection);
  }

  /** Asks the cluster for its slot table again, once at a time; settles once it was read. */
  #refreshSlots(): Promise<void> | undefined {
    const rediscover = this.#cluster._slots?.rediscover;
    if (this.#refreshing) return this.#refreshing;
    if (!this.#opened || this.#closed || typeof rediscover !== 'function') return undefined;
    const ready = this.#cluster.masters.find((master) => master.client?.isReady)?.client;
    // node-redis starts with the node given (a client, whose options it reads), then the roots.
    const startWith = ready ?? { options: this.#caller._options.rootNodes[0] };
    this.#refreshing = rediscover
      .call(this.#cluster._slots, startWith)
      .catch(() => undefined) // the next failure tries again
      .finally(() => {
        this.#refreshing = undefined;
      });
    return this.#refreshing;
  }

  /** `cause`: the connection error behind it, when node-redis reported one. */
  #notSent(why: string, cause: Error | undefined): NotSentError {
    const detail = cause ? `: ${cause.message}` : '';
    return new NotSentError(`not sent to ${this.name} (${why})${detail}`, { cause });
  }
}

/** `cluster host:port,...` from the root nodes, as an ioredis Cluster is named. */
function nodeRedisClusterName(cluster: NodeRedisClusterLike): string {
  return clusterNameOf(cluster._options.rootNodes.map(addressOf));
}

function addressOf({ url, socket }: NodeRedisAddress): string {
  if (url !== undefined) {
    // Only host and port: the URL may hold a password.
    const { hostname, port } = new URL(url);
    return `${hostname || 'localhost'}:${port || 6379}`;
  }
  return socket?.path ?? `${socket?.host ?? 'localhost'}:${socket?.port ?? 6379}`;
}
