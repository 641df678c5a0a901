import { CONNECT_WAIT_MS, type Subscriber } from './connection.js';
import { IORedisConnection, type IORedisLike } from './ioredis.js';
import { keySlot } from './libraries.js';
import { answeredInTime } from './sharded-subscribe.js';

/**
 * What the subscriber needs of an ioredis `Cluster`: its slot table, its masters, and a way
 * to read the table again (a subset of `SlotTable`, declared here so that the two
 * files do not import each other).
 */
interface SlotTable {
  /** Per slot, `host:port` of its master first. */
  readonly slots: readonly (readonly string[] | undefined)[];
  readonly status: string;
  nodes(role: 'master'): readonly IORedisLike[];
  refreshSlotsCache(callback?: (error?: Error | null) => void): void;
  /** 'refresh': the slot table was read again. */
  on(event: 'refresh', listener: () => void): unknown;
  off(event: 'refresh', listener: () => void): unknown;
}

/** A client of one master in sharded subscriber mode (ioredis 5.2+, 6, iovalkey). */
interface ShardSubscriberLike extends IORedisLike {
  readonly status: string;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready' | 'close' | 'moved', listener: () => void): unknown;
  on(event: 'smessage', listener: (channel: string, message: string) => void): unknown;
  ssubscribe(channel: string): Promise<unknown>;
  sunsubscribe(channel: string): Promise<unknown>;
}

/**
 * The `sunsubscribe` a master pushes when the slot of a channel moves away, which ioredis 5
 * and iovalkey do not expect and report as an error ("Command queue state error ... Last
 * reply: sunsubscribe,<channel>,<count>"); ioredis 6 emits `moved` on the client instead.
 */
const ENDED_BY_SERVER = /Last reply: sunsubscribe,/;

/**
 * Sharded subscriptions over an ioredis Cluster (the same for ioredis 5 and 6 and iovalkey,
 * whose Cluster clients differ there): one subscriber client per master, opened from the
 * cluster's own client of that master, and `SSUBSCRIBE` of each channel on the master that
 * its slot table says serves the channel's slot. When a slot moves, its master ends the
 * subscription (a `sunsubscribe` push); the slot table is then read again and `onReady`
 * called, so that every channel is subscribed anew where it now lives. A subscribe that gets
 * no answer (ioredis leaves an `SSUBSCRIBE` answered by MOVED pending) fails after
 * {@link CONNECT_WAIT_MS} and reads the slot table again too. Whatever the client says of a
 * move, each reading of the slot table (the cluster reads it on MOVED and on a lost master)
 * that names another master for a channel than the one it was sent to calls `onReady` too:
 * a master that died sends nothing, and its replica is named only once promoted.
 */
export class IORedisShardedSubscriber implements Subscriber {
  readonly #cluster: SlotTable;
  readonly #onMessage: (channel: string, message?: string) => void;
  readonly #onReady: (() => void) | undefined;
  /** The subscriber client of each master, by `host:port`. */
  readonly #shards = new Map<string, ShardSubscriberLike>();
  /** Each channel subscribed, and the master (`host:port`) its last subscribe went to. */
  readonly #sentTo = new Map<string, string | undefined>();
  readonly #onSlotTable = () => this.#slotTableRead();
  #refreshing = false;
  #closed = false;

  constructor(
    cluster: SlotTable,
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ) {
    this.#cluster = cluster;
    this.#onMessage = onMessage;
    this.#onReady = onReady;
    cluster.on('refresh', this.#onSlotTable);
  }

  subscribe(channel: string): Promise<unknown> {
    const shard = this.#shardOf(channel);
    this.#sentTo.set(channel, this.#masterOf(channel));
    if (!shard) {
      this.#slotsMoved();
      return Promise.reject(new Error(`no master known for the slot of ${channel}`));
    }
    return this.#bounded(shard.ssubscribe(channel));
  }

  unsubscribe(channel: string): Promise<unknown> {
    this.#sentTo.delete(channel);
    const shard = this.#shardOf(channel);
    return shard ? this.#bounded(shard.sunsubscribe(channel)) : Promise.resolve(0);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#cluster.off('refresh', this.#onSlotTable);
    const shards = [...this.#shards.values()];
    this.#shards.clear();
    await Promise.all(shards.map((shard) => new IORedisConnection(shard, 'subscriber').close()));
  }

  /** `host:port` of the master that the slot table names for `channel`'s slot. */
  #masterOf(channel: string): string | undefined {
    return this.#cluster.slots[keySlot(channel)]?.[0];
  }

  /** The subscriber client of the master serving `channel`'s slot, opened if need be. */
  #shardOf(channel: string): ShardSubscriberLike | undefined {
    if (this.#closed) return undefined;
    const address = this.#masterOf(channel);
    const master = this.#cluster
      .nodes('master')
      .find((node) => `${node.options.host}:${node.options.port}` === address);
    if (address === undefined || master === undefined) return undefined;
    let shard = this.#shards.get(address);
    // A client that gave up reconnecting (its master died) never subscribes again.
    if (shard?.status === 'end') shard = undefined;
    if (!shard) {
      shard = master.duplicate({
        enableOfflineQueue: true,
        autoResubscribe: false,
      }) as unknown as ShardSubscriberLike;
      shard.on('error', (error) => {
        if (ENDED_BY_SERVER.test(error.message)) this.#slotsMoved();
      });
      shard.on('moved', () => this.#slotsMoved());
      shard.on('smessage', (ch: string, message: string) => this.#onMessage(ch, message));
      shard.on('ready', () => this.#onReady?.()); // a reconnect lost its subscriptions
      // A master that died sends no push: its slots move to a replica that the slot table
      // names after the failover. Read it again (and, until the failover, again after each
      // subscribe that got no answer in time).
      shard.on('close', () => this.#slotsMoved());
      this.#shards.set(address, shard);
    }
    return shard;
  }

  /** Fails after {@link CONNECT_WAIT_MS} without an answer, and reads the slot table again. */
  #bounded(reply: Promise<unknown>): Promise<unknown> {
    return answeredInTime(reply, () => this.#slotsMoved());
  }

  /** Closes the subscriber clients of servers that are masters no more (dead, or demoted). */
  #dropFormerMasters(): void {
    const masters = new Set(
      this.#cluster.nodes('master').map((node) => `${node.options.host}:${node.options.port}`),
    );
    for (const [address, shard] of this.#shards) {
      if (masters.has(address)) continue;
      this.#shards.delete(address);
      new IORedisConnection(shard, 'subscriber').close().catch(() => undefined);
    }
  }

  /**
   * The slot table was read (by anyone): when it names another master for a channel than the
   * one its last subscribe went to, every channel is subscribed again where it lives now.
   */
  #slotTableRead(): void {
    if (this.#refreshing || this.#closed) return; // `#slotsMoved` does it once read
    for (const [channel, sentTo] of this.#sentTo) {
      if (this.#masterOf(channel) === sentTo) continue;
      this.#dropFormerMasters();
      this.#onReady?.();
      return;
    }
  }

  /** Reads the slot table again, then has every channel subscribed where it lives now. */
  #slotsMoved(): void {
    if (this.#refreshing || this.#closed) return;
    this.#refreshing = true;
    this.#cluster.refreshSlotsCache(() => {
      this.#refreshing = false;
      if (this.#closed) return;
      this.#dropFormerMasters();
      this.#onReady?.();
    });
  }
}
