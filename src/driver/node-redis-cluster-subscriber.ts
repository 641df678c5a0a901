import { CONNECT_WAIT_MS, type Subscriber } from './connection.js';
import { keySlot } from './libraries.js';
import { answeredInTime } from './sharded-subscribe.js';

/** The pause before opening a cluster again when no root node could be reached. */
const REOPEN_DELAY_MS = 1_000;

/** A node-redis master's sharded pub/sub client (internal to node-redis). */
interface PubSubClient {
  /** Where it connects: node-redis reads the slot table from it first. */
  readonly options?: object;
  readonly isReady?: boolean;
  on(event: string, listener: () => void): unknown;
}

/** A master as node-redis keeps it, with its sharded pub/sub client. */
interface ShardedMaster {
  readonly pubSub?: { readonly client?: PubSubClient };
}

/**
 * What node-redis's cluster (`createCluster()`, 5+) offers for pub/sub, and its slot table's
 * refresh: read by the subscriber and by the adapter's own cluster alike.
 */
export interface ClusterPubSub {
  /** Internal to node-redis (no public way to refresh the slot table): it may go away. */
  readonly _slots?: {
    rediscover?(startWith: { readonly options?: object | undefined }): Promise<void>;
  };
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<void>;
  unsubscribe(channel: string, listener: (message: string, channel: string) => void): Promise<void>;
  sSubscribe(channel: string, listener: (message: string, channel: string) => void): Promise<void>;
  sUnsubscribe(
    channel: string,
    listener: (message: string, channel: string) => void,
  ): Promise<void>;
}

/** The node-redis cluster (`createCluster()`, 5+) a subscriber is opened from. */
interface SubscriberCluster extends ClusterPubSub {
  readonly isOpen: boolean;
  readonly _options: { readonly rootNodes: readonly object[] };
  readonly masters: readonly ShardedMaster[];
  readonly slots: readonly ({ readonly master: ShardedMaster } | undefined)[];
  duplicate(overrides?: object): unknown;
  connect(): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * Pub/sub over a node-redis cluster of its own, opened again after a pause while no root node
 * answers, until closed. Sharded subscriptions follow their slot (see `#watchMoves`). A
 * master that died sends nothing, and node-redis keeps reconnecting to it: a sharded
 * subscribe to it would wait for good, or (node-redis counting the channel as subscribed
 * there) resolve at once and subscribe nothing. So a sharded subscribe whose master's pub/sub
 * client is not connected reads the slot table first, and one that gets no answer within
 * {@link CONNECT_WAIT_MS} fails and has the slot table read again.
 */
export class NodeRedisClusterSubscriber implements Subscriber {
  readonly #cluster: SubscriberCluster;
  readonly #listener: (message: string, channel: string) => void;
  readonly #onReady: (() => void) | undefined;
  readonly #sharded: boolean;
  /** Pub/sub clients of masters whose slot moves are watched (see `#watchMoves`). */
  readonly #watched = new WeakSet<object>();
  #opening: Promise<void> | undefined;
  #reopen: NodeJS.Timeout | undefined;
  #rereading: Promise<void> | undefined;
  #closed = false;

  /** `caller`: the caller's cluster, whose options (root nodes, credentials, TLS) it takes. */
  constructor(
    caller: Pick<SubscriberCluster, 'duplicate'>,
    mode: 'plain' | 'sharded',
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ) {
    this.#sharded = mode === 'sharded';
    // Only the pub/sub connection: no connection to each master.
    this.#cluster = caller.duplicate({ minimizeConnections: true }) as SubscriberCluster;
    this.#cluster.on('error', () => {}); // a lost subscriber only means waiters poll
    this.#listener = (message, channel) => onMessage(channel, message);
    this.#onReady = onReady;
    this.#opened().catch(() => undefined); // tried again after a pause
  }

  subscribe(channel: string): Promise<unknown> {
    if (!this.#sharded) {
      return this.#opened().then(() => this.#cluster.subscribe(channel, this.#listener));
    }
    const subscribed = this.#opened()
      .then(() => (this.#masterDown(channel) ? this.#reread() : undefined))
      .then(() => this.#cluster.sSubscribe(channel, this.#listener))
      .then(() => this.#watchMoves());
    return this.#bounded(subscribed);
  }

  unsubscribe(channel: string): Promise<unknown> {
    return this.#opened().then(() =>
      this.#sharded
        ? this.#cluster.sUnsubscribe(channel, this.#listener)
        : this.#cluster.unsubscribe(channel, this.#listener),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reopen);
    if (this.#cluster.isOpen) this.#cluster.destroy();
  }

  /**
   * node-redis (5.12, 6.3) reads a slot's move from its clients' `server-sunsubscribe` event,
   * which they emit as `sharded-channel-moved`: it never subscribes such a channel again by
   * itself. So each master's pub/sub client (internal to node-redis) is watched here: after a
   * move, the slot table is read again and `onReady` has every channel subscribed anew.
   */
  #watchMoves(): void {
    for (const master of this.#cluster.masters) {
      const client = master.pubSub?.client;
      if (!client || this.#watched.has(client)) continue;
      this.#watched.add(client);
      client.on('sharded-channel-moved', () => this.#slotsMoved(client));
    }
  }

  /** Fails after {@link CONNECT_WAIT_MS} without an answer, and reads the slot table again. */
  #bounded(reply: Promise<unknown>): Promise<unknown> {
    return answeredInTime(reply, () => this.#slotsMoved());
  }

  /** Whether the pub/sub client of the master that node-redis names for `channel` is down. */
  #masterDown(channel: string): boolean {
    const client = this.#cluster.slots[keySlot(channel)]?.master.pubSub?.client;
    return client?.isReady === false;
  }

  /** Reads the slot table again, then has every channel subscribed anew. */
  #slotsMoved(startWith?: PubSubClient): void {
    if (this.#rereading || this.#closed) return;
    void this.#reread(startWith).then(() => {
      if (!this.#closed) this.#onReady?.();
    });
  }

  /**
   * Reads the slot table again (once at a time), starting with `startWith` (else the first
   * root node): node-redis drops the clients of masters that are gone.
   */
  #reread(startWith?: PubSubClient): Promise<void> {
    const rediscover = this.#cluster._slots?.rediscover;
    if (this.#closed || typeof rediscover !== 'function') return Promise.resolve();
    const from = startWith ?? { options: this.#cluster._options.rootNodes[0] };
    this.#rereading ??= Promise.resolve(rediscover.call(this.#cluster._slots, from))
      .catch(() => undefined) // the next subscribe that fails reads it again
      .finally(() => {
        this.#rereading = undefined;
      });
    return this.#rereading;
  }

  #opened(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the subscriber was closed'));
    this.#opening ??= this.#cluster.connect().then(
      () => {
        if (this.#closed) this.#cluster.destroy();
        else this.#onReady?.();
      },
      (error: unknown) => {
        this.#opening = undefined;
        if (!this.#closed) {
          this.#reopen = setTimeout(() => this.#opened().catch(() => undefined), REOPEN_DELAY_MS);
          this.#reopen.unref();
        }
        throw error;
      },
    );
    return this.#opening;
  }
}
