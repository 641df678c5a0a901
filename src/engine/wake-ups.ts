import { CONNECT_WAIT_MS, type RedisConnection, type Subscriber } from '../driver/connection.js';
import { shardedWakeChannel, wakeChannel } from '../keys.js';
import type { WarningCode } from './events.js';
import { slotOf, slotTag } from './slot-tags.js';
import { POLLING_ONLY, TicketWatch, type Watch } from './ticket-watch.js';
import { WakeChannel } from './wake-channel.js';

export type { Watch } from './ticket-watch.js';

/** A refusal that no retry changes: a server before Redis 7, an ACL user without the command. */
const REFUSED = /unknown command|NOPERM|no permissions/i;

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
  /** Whether the user's right to PUBLISH was asked (or is being asked). */
  #publishChecked = false;
  /** The plain pub/sub commands refused so far: each is reported once. */
  readonly #refusedPlain = new Set<'PUBLISH' | 'SUBSCRIBE'>();
  /** The sharded channel of each slot the locker waited in. */
  readonly #bySlot = new Map<number, WakeChannel>();
  readonly #tickets = new Map<string, TicketWatch>();
  /**
   * Tickets woken before their waiter started watching: the hand-off can overtake the reply
   * to the attempt that joined the line. Tickets are never reused, so a few suffice.
   */
  readonly #unclaimed = new Set<string>();
  #closed = false;

  constructor(nodes: readonly RedisConnection[], options: WakeUpOptions) {
    this.#nodes = nodes;
    this.#options = options;
    this.#plainName = wakeChannel(options.prefix, options.id);
    this.#plainWake = `PUBLISH ${this.#plainName}`;
    // The prefix has no brace of its own (see `keys.ts`): the channel's tag is its slot's.
    this.#sharded = nodes.length > 0 && nodes.every((node) => node.openShardedSubscriber);
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
   * Call as a release begins. A script's `PUBLISH` fails silently (it must not fail the
   * release), so the first release of a locker asks once, with an empty message to its own
   * channel (which wakes nobody), whether the user may publish; a refusal is reported as a
   * `PUBSUB_UNAVAILABLE` warning. On a Cluster's sharded channels, see `#probePublish`.
   */
  releasing(): void {
    if (this.#publishChecked || this.#sharded || this.#closed) return;
    this.#publishChecked = true;
    this.#nodes.forEach((node, index) => {
      node.send('PUBLISH', [this.#plainName, ''], CONNECT_WAIT_MS).catch((error: unknown) => {
        if (REFUSED.test(messageOf(error))) this.#plainRefused('PUBLISH', error, index);
        else this.#publishChecked = false; // not an answer (a node down): ask again next time
      });
    });
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
        this.#plainRefused('SUBSCRIBE', error, this.#nodeOf.get(subscriber) ?? 0),
    );
    return this.#plain;
  }

  /** One subscriber per node that can open one, each resubscribing its channels when ready. */
  #openSubscribers(kind: 'plain' | 'sharded'): Subscriber[] {
    return this.#nodes.flatMap((node, index) => {
      const open = kind === 'plain' ? node.openSubscriber : node.openShardedSubscriber;
      if (!open) return [];
      const subscriber: Subscriber = open.call(
        node,
        (channel, message) => this.#announce(channel, message),
        () => this.#resubscribe(kind, subscriber),
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
    if (!this.#sharded || this.#closed || !REFUSED.test(reply)) return;
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
   * `command` was refused on node `node`: waiters poll (the waiter side) or are not woken by
   * this locker's releases (the release side). Said once per command, naming the rule to add:
   * the channels (`&<prefix>*`) when the user may not use them, else the command.
   */
  #plainRefused(command: 'PUBLISH' | 'SUBSCRIBE', error: unknown, node: number): void {
    const reply = messageOf(error);
    if (this.#closed || !REFUSED.test(reply) || this.#refusedPlain.has(command)) return;
    this.#refusedPlain.add(command);
    const rule = /channel/i.test(reply) ? `&${this.#options.prefix}*` : `+${command.toLowerCase()}`;
    const effect =
      command === 'SUBSCRIBE'
        ? "this locker's waiters are not woken by releases: they poll every retryDelayMs"
        : "this locker's releases wake no waiter: waiters poll every retryDelayMs";
    this.#options.warn(
      'PUBSUB_UNAVAILABLE',
      `refused ${command} (${reply}): ${effect}; grant ${rule}`,
      node,
    );
  }

  /** Wakes the waiter named by `message`; every waiter when the adapter gives no payload. */
  #announce(channel: string, message: string | undefined): void {
    if (channel !== this.#plainName && !channel.startsWith(`${this.#plainName}:{`)) return;
    if (message === '') return; // the probe
    const named = message === undefined ? undefined : this.#tickets.get(message);
    if (message !== undefined && !named) {
      this.#keepUnclaimed(message);
      return;
    }
    if (named) named.wakeUp();
    else for (const watch of this.#tickets.values()) watch.wakeUp();
  }

  #keepUnclaimed(ticket: string): void {
    this.#unclaimed.add(ticket);
    if (this.#unclaimed.size <= UNCLAIMED_KEPT) return;
    const [oldest] = this.#unclaimed;
    if (oldest !== undefined) this.#unclaimed.delete(oldest);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** At most this many unclaimed wake-ups are kept (the oldest goes first). */
const UNCLAIMED_KEPT = 256;

/**
 * One acquisition's use of wake-ups, from its first busy attempt on: each pause ends early
 * when the lock was handed to it since the attempt began.
 */
export class Waiter {
  readonly #wakeUps: WakeUps;
  readonly #ticket: number;
  readonly #key: string;
  #watch: Watch | undefined;
  #seen = 0;

  /** `ticket`: the acquisition's place in line, which wake-up messages name; `key`: its lock. */
  constructor(wakeUps: WakeUps, ticket: number, key: string) {
    this.#wakeUps = wakeUps;
    this.#ticket = ticket;
    this.#key = key;
  }

  /** Call as an attempt begins: a wake-up from now on cuts the next pause short. */
  attemptBegins(): void {
    this.#seen = this.#watch?.seen() ?? 0;
  }

  /** Starts listening; resolves once subscribed (or subscribing failed). */
  listen(): Promise<void> {
    this.#watch ??= this.#wakeUps.watch(this.#ticket, this.#key);
    return this.#watch.ready;
  }

  /**
   * What ends the next pause early: a wake-up since the attempt began. `cancel` must follow
   * the pause.
   */
  nextRelease(): { wake: Promise<void>; cancel: () => void } | undefined {
    return this.#watch?.next(this.#seen);
  }

  /** Stops listening. */
  dispose(): void {
    this.#watch?.dispose();
  }
}
