import { CONNECT_WAIT_MS, type RedisConnection, type Subscriber } from '../driver/connection.js';
import { shardedWakeChannel, wakeChannel } from '../keys.js';
import type { WarningCode } from './events.js';
import { isRefusal, messageOf, PlainPubSubRefusals } from './pubsub-refusals.js';
import { slotOf, slotTag } from './slot-tags.js';
import { SubscriptionCheck } from './subscription-check.js';
import { POLLING_ONLY, TicketWatch, type Watch } from './ticket-watch.js';
import { WakeChannel } from './wake-channel.js';

export type { HandOver, Watch } from './ticket-watch.js';

/** What {@link WakeUps} needs of its locker. */
export interface WakeUpOptions {
  /** The locker's key prefix: every channel starts with it. */
  readonly prefix: string;
  /** The locker's own random id (see `newLockerId`). */
  readonly id: string;
  /**
   * Reports a warning (once per locker and cause) about node `node` (an index), or the whole
   * cluster when absent.
   */
  warn(code: WarningCode, message: string, node?: number): void;
  /**
   * A monotonic clock, in ms: how often a sharded channel is checked is bounded by it.
   * @default performance.now
   */
  readonly now?: () => number;
}

/**
 * Wakes a waiting acquirer the moment a release hands it the lock, instead of letting it
 * sleep out its retry delay. Each message names the waiter by its ticket, on a channel of the
 * locker's own, subscribed once and renewed whenever a subscriber reconnects, so no
 * subscription is made or dropped per wait:
 * - on single servers (and Redlock), one channel per locker (`wakeChannel`), subscribed on one
 *   subscriber connection per node, and published with `PUBLISH`;
 * - on a Redis Cluster, where `PUBLISH` reaches every node of the cluster, one sharded channel
 *   per hash slot the locker waits in (`shardedWakeChannel`), subscribed with `SSUBSCRIBE` on
 *   the slot's master only and published with `SPUBLISH`, which stays within the slot's shard.
 *   A cluster that refuses either (before Redis 7, an ACL user without them) falls back to the
 *   first way, with a `SHARDED_PUBSUB_UNAVAILABLE` warning.
 * A missed message costs at most the polling delay, which never exceeds the holder's lease.
 * A sharded subscription that a slot's move ended without the client subscribing again is
 * found and made again from the waiters' side (see {@link SubscriptionCheck}).
 */
export class WakeUps {
  readonly #nodes: readonly RedisConnection[];
  readonly #options: WakeUpOptions;
  readonly #plainName: string;
  /** What a waiter leaves for a release when its locker is not on a Cluster (built once). */
  readonly #plainWake: string;
  /** Whether hand-offs are published on sharded channels (until a node refuses them). */
  #sharded: boolean;
  #plain: WakeChannel | undefined;
  #plainSubscribers: Subscriber[] | undefined;
  #shardedSubscribers: Subscriber[] | undefined;
  /** Which node each subscriber is on (an index into the nodes). */
  readonly #nodeOf = new Map<Subscriber, number>();
  readonly #plainRefusals: PlainPubSubRefusals;
  readonly #check: SubscriptionCheck;
  /** The sharded channel of each slot the locker waited in. */
  readonly #bySlot = new Map<number, WakeChannel>();
  readonly #tickets = new Map<string, TicketWatch>();
  /**
   * Tickets woken before their waiter started watching: the hand-off can overtake the reply
   * to the attempt that joined the line. Tickets are never reused, so a few suffice.
   */
  readonly #unclaimed = new Set<string>();
  /** How often each node's subscriber was (re)established or lost (see {@link readiness}). */
  readonly #readies: number[];
  #closed = false;

  constructor(nodes: readonly RedisConnection[], options: WakeUpOptions) {
    this.#nodes = nodes;
    this.#options = options;
    this.#plainName = wakeChannel(options.prefix, options.id);
    this.#plainWake = `PUBLISH ${this.#plainName}`;
    this.#readies = nodes.map(() => 0);
    // The prefix has no brace of its own (see `keys.ts`): the channel's tag is its slot's.
    this.#sharded = nodes.length > 0 && nodes.every((node) => node.openShardedSubscriber);
    const warn = (code: WarningCode, message: string, node: number) => {
      if (!this.#closed) options.warn(code, message, node);
    };
    this.#plainRefusals = new PlainPubSubRefusals(options.prefix, warn);
    this.#check = new SubscriptionCheck(nodes, {
      nodeOf: (subscriber) => this.#nodeOf.get(subscriber) ?? 0,
      warn,
      now: options.now ?? (() => performance.now()),
    });
  }

  /**
   * What a waiter for `key` leaves in the line for a release to wake it: the command and the
   * channel, `SPUBLISH <channel of key's slot>` on a Cluster, else `PUBLISH <channel>`.
   */
  wakeFor(key: string): string {
    if (!this.#sharded) return this.#plainWake;
    const slot = slotOf(key);
    return this.#bySlot.get(slot)?.wake ?? `SPUBLISH ${this.#shardedName(slot)}`;
  }

  /** Whether the channel that wakes waiters for `key` is subscribed on every node. */
  listening(key: string): boolean {
    return this.#channelOf(key)?.listening ?? false;
  }

  /** Whether the first subscription of the channel that wakes waiters for `key` is over. */
  subscribed(key: string): boolean {
    return this.#channelOf(key)?.subscribed ?? false;
  }

  /**
   * Call as a release begins: the locker's first release asks whether the user may
   * `PUBLISH` (see `PlainPubSubRefusals.checkPublish`). On a Cluster's sharded channels, see
   * `#probePublish`.
   */
  releasing(): void {
    if (this.#sharded || this.#closed) return;
    this.#plainRefusals.checkPublish(this.#nodes, this.#plainName);
  }

  /**
   * Call as a waiter for `key` pauses: a failed subscribe of its sharded channel is tried
   * again (see {@link SubscriptionCheck}). Whether the channel counts as subscribed.
   */
  pausing(key: string): boolean {
    const channel = this.#channelOf(key);
    if (this.#sharded && channel) this.#check.pausing(channel);
    return channel?.listening ?? false;
  }

  /**
   * A waiter for `key` got the lock after a pause taken while its channel counted as
   * subscribed, and no message came: on a Cluster, the subscription is checked.
   */
  unanswered(key: string): void {
    if (!this.#sharded || this.#closed) return;
    const slot = slotOf(key);
    const channel = this.#bySlot.get(slot);
    if (channel) this.#check.unanswered(channel, slot);
  }

  /**
   * How many times node `index`'s subscriber has been (re)established or lost. A wake-up that
   * came while this number stayed the same came from the server that its connection first
   * reached: a restart or failover ends the connection.
   */
  readiness(index: number): number {
    return this.#readies[index] ?? 0;
  }

  /** Watches for the wake-ups of `ticket`, a waiter for `key`, subscribing first if need be. */
  watch(ticket: number, key: string): Watch {
    if (this.#closed) return POLLING_ONLY;
    const name = String(ticket); // as Redis prints a score below 2^53
    const wakes = this.#unclaimed.delete(name) ? 1 : 0;
    const watch = new TicketWatch(this.#opened(key).ready, wakes, name, this.#tickets);
    this.#tickets.set(name, watch);
    return watch;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const subscribers = [...(this.#plainSubscribers ?? []), ...(this.#shardedSubscribers ?? [])];
    this.#plainSubscribers = undefined;
    this.#shardedSubscribers = undefined;
    this.#tickets.clear();
    this.#unclaimed.clear();
    this.#bySlot.clear();
    await Promise.all(subscribers.map((subscriber) => subscriber.close()));
  }

  #shardedName(slot: number): string {
    return shardedWakeChannel(this.#options.prefix, this.#options.id, slotTag(slot));
  }

  #channelOf(key: string): WakeChannel | undefined {
    return this.#sharded ? this.#bySlot.get(slotOf(key)) : this.#plain;
  }

  #opened(key: string): WakeChannel {
    if (!this.#sharded) return this.#openedPlain();
    const slot = slotOf(key);
    let channel = this.#bySlot.get(slot);
    if (channel) return channel;
    const first = this.#shardedSubscribers === undefined;
    this.#shardedSubscribers ??= this.#openSubscribers('sharded');
    const subscribers = this.#shardedSubscribers;
    const name = this.#shardedName(slot);
    channel = new WakeChannel(name, 'SPUBLISH', subscribers, this.#nodes.length, (error) =>
      this.#refused('SSUBSCRIBE', error),
    );
    this.#bySlot.set(slot, channel);
    if (first) this.#probePublish(name);
    return channel;
  }

  #openedPlain(): WakeChannel {
    if (this.#plain) return this.#plain;
    this.#plainSubscribers ??= this.#openSubscribers('plain');
    const subscribers = this.#plainSubscribers;
    this.#plain = new WakeChannel(
      this.#plainName,
      'PUBLISH',
      subscribers,
      this.#nodes.length,
      (error, subscriber) =>
        this.#plainRefusals.refused('SUBSCRIBE', error, this.#nodeOf.get(subscriber) ?? 0),
    );
    return this.#plain;
  }

  /** One subscriber per node that can open one, each resubscribing its channels when ready. */
  #openSubscribers(kind: 'plain' | 'sharded'): Subscriber[] {
    return this.#nodes.flatMap((node, index) => {
      const open = kind === 'plain' ? node.openSubscriber : node.openShardedSubscriber;
      if (!open) return [];
      const connected = () => {
        this.#readies[index] = (this.#readies[index] ?? 0) + 1;
      };
      const subscriber: Subscriber = open.call(
        node,
        (channel, message) => this.#announce(channel, message, index),
        () => {
          connected();
          this.#resubscribe(kind, subscriber);
        },
        connected,
      );
      this.#nodeOf.set(subscriber, index);
      return [subscriber];
    });
  }

  #resubscribe(kind: 'plain' | 'sharded', subscriber: Subscriber): void {
    if (this.#closed) return;
    const channels = kind === 'plain' ? [this.#plain] : [...this.#bySlot.values()];
    for (const channel of channels) channel?.resubscribe(subscriber);
  }

  /**
   * A script's `SPUBLISH` fails silently (it must not fail the release), so whether the
   * server and the user allow it is asked once, with an empty message (which wakes nobody).
   */
  #probePublish(channel: string): void {
    for (const node of this.#nodes) {
      node
        .send('SPUBLISH', [channel, ''], CONNECT_WAIT_MS)
        .catch((error: unknown) => this.#refused('SPUBLISH', error));
    }
  }

  /** After a refusal of `command`, hand-offs wake waiters by `PUBLISH`, from the next attempt. */
  #refused(command: 'SSUBSCRIBE' | 'SPUBLISH', error: unknown): void {
    const reply = messageOf(error);
    if (!this.#sharded || this.#closed || !isRefusal(error)) return;
    this.#sharded = false;
    this.#options.warn(
      'SHARDED_PUBSUB_UNAVAILABLE',
      `the cluster refused ${command} (${reply}): releases wake waiters with PUBLISH, ` +
        'which every node of the cluster receives',
    );
    this.#openedPlain(); // the waiters of today ask again with PUBLISH
    const sharded = this.#shardedSubscribers ?? [];
    this.#shardedSubscribers = undefined;
    this.#bySlot.clear();
    for (const subscriber of sharded) void subscriber.close();
  }

  /**
   * Wakes the waiter named by `message` (`<ticket>`, or `<ticket> <attempt>` for a hand-over
   * it may count from, see `handOver` in LOCK_LINE), from node `node`; every waiter when the
   * adapter gives no payload.
   */
  #announce(channel: string, message: string | undefined, node: number): void {
    if (channel !== this.#plainName && !channel.startsWith(`${this.#plainName}:{`)) return;
    if (message === '') return; // the probe
    const space = message?.indexOf(' ') ?? -1;
    const ticket = space < 0 ? message : message?.slice(0, space);
    const named = ticket === undefined ? undefined : this.#tickets.get(ticket);
    if (ticket !== undefined && !named) {
      this.#keepUnclaimed(ticket);
      return;
    }
    if (!named) {
      for (const watch of this.#tickets.values()) watch.wakeUp();
      return;
    }
    const attempt = space < 0 ? Number.NaN : Number(message?.slice(space + 1));
    named.wakeUp(Number.isSafeInteger(attempt) ? { node, attempt } : undefined);
  }

  #keepUnclaimed(ticket: string): void {
    this.#unclaimed.add(ticket);
    if (this.#unclaimed.size <= UNCLAIMED_KEPT) return;
    const [oldest] = this.#unclaimed;
    if (oldest !== undefined) this.#unclaimed.delete(oldest);
  }
}

/** At most this many unclaimed wake-ups are kept (the oldest goes first). */
const UNCLAIMED_KEPT = 256;
