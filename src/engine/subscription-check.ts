import { CONNECT_WAIT_MS, type RedisConnection, type Subscriber } from '../driver/connection.js';
import type { WarningCode } from './events.js';
import type { WakeChannel } from './wake-channel.js';

/**
 * The least time between two checks of one channel: a failed subscribe is tried again, or a
 * hand-off that came without a message has the slot's master asked, no sooner than this
 * after the channel's last check.
 */
export const CHECK_INTERVAL_MS = CONNECT_WAIT_MS;

/** What {@link SubscriptionCheck} needs of its locker. */
export interface SubscriptionCheckOptions {
  /** The node (an index into the nodes) each subscriber is on. */
  nodeOf(subscriber: Subscriber): number;
  /** Reports a warning about node `node`. */
  warn(code: WarningCode, message: string, node: number): void;
  /** A monotonic clock, in ms. */
  now(): number;
}

/**
 * Keeps a Cluster's sharded wake-up channels subscribed on the master of their slot, whatever
 * the client reports. When a slot moves (a failover, a reshard, a master killed and its
 * replica promoted), the server ends the subscription; some clients say nothing of it, or
 * lose the subscription while their master is down, and the channel's waiters would poll
 * for good. Two moments reveal that, and both come only from waiters (a lock nobody waits
 * for costs nothing here):
 * - a waiter pauses while a subscribe of its channel failed: it is tried again;
 * - a waiter was handed the lock with no message, after a pause taken while its channel
 *   counted as subscribed: the slot's master is asked with an empty `SPUBLISH` (which wakes
 *   nobody), whose reply counts the subscribers there. None: the subscription is lost, it is
 *   made again, and a `WAKE_UPS_REPAIRED` warning says so.
 * Each channel is checked at most once per {@link CHECK_INTERVAL_MS}.
 */
export class SubscriptionCheck {
  readonly #nodes: readonly RedisConnection[];
  readonly #options: SubscriptionCheckOptions;
  /** When each channel was last checked. */
  readonly #checkedAt = new WeakMap<WakeChannel, number>();
  /** Channels found without a subscription, until subscribed again. */
  readonly #repairing = new WeakSet<WakeChannel>();

  constructor(nodes: readonly RedisConnection[], options: SubscriptionCheckOptions) {
    this.#nodes = nodes;
    this.#options = options;
  }

  /** A waiter of `channel` pauses: subscribes again where the last subscribe failed. */
  pausing(channel: WakeChannel): void {
    const failed = channel.failedOn();
    if (failed.length === 0 || !this.#due(channel)) return;
    for (const subscriber of failed) channel.resubscribe(subscriber);
  }

  /**
   * A waiter of `channel`, the sharded channel of `slot`, was handed the lock without a
   * message: subscribes again on each node whose master of the slot has no subscriber.
   */
  unanswered(channel: WakeChannel, slot: number): void {
    if (!this.#due(channel)) return;
    for (const subscriber of channel.listeningOn()) {
      const index = this.#options.nodeOf(subscriber);
      const node = this.#nodes[index];
      if (!node) continue;
      node.send('SPUBLISH', [channel.name, ''], CONNECT_WAIT_MS).then(
        (receivers) => {
          if (Number(receivers) > 0) return;
          const repairing = this.#repairing.has(channel);
          this.#repairing.add(channel);
          void channel.resubscribe(subscriber, { lost: true }).then((subscribed) => {
            if (subscribed) this.#repairing.delete(channel);
          });
          if (repairing) return; // said once until repaired
          this.#options.warn(
            'WAKE_UPS_REPAIRED',
            `the sharded wake-up channel of slot ${slot} had no subscriber on the slot's ` +
              'master (the slot moved, and the client had not subscribed again): a waiter ' +
              'polled for a hand-off; subscribed again',
            index,
          );
        },
        // Not an answer (the master is down, the slot moving): the next hand-off without a
        // message asks again, however soon.
        () => this.#checkedAt.delete(channel),
      );
    }
  }

  #due(channel: WakeChannel): boolean {
    const now = this.#options.now();
    const last = this.#checkedAt.get(channel);
    if (last !== undefined && now - last < CHECK_INTERVAL_MS) return false;
    this.#checkedAt.set(channel, now);
    return true;
  }
}
