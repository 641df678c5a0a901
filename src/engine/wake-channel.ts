import type { Subscriber } from '../driver/connection.js';

/** How a release publishes a wake-up: to every node of a Cluster, or to one slot's shard. */
export type PublishCommand = 'PUBLISH' | 'SPUBLISH';

/**
 * One channel a locker listens on, subscribed on one subscriber per node, again whenever a
 * subscriber is (re)connected (a channel subscribed twice is harmless).
 */
export class WakeChannel {
  /** Resolves once the first subscription round is over, subscribed or not. */
  readonly ready: Promise<void>;
  /** What a waiter stores in its line for a release to wake it: `<command> <channel>`. */
  readonly wake: string;
  readonly #subscribers: readonly Subscriber[];
  readonly #nodes: number;
  /** Subscribers whose last subscribe succeeded. */
  readonly #listeningOn = new Set<Subscriber>();
  /** Subscribers whose last subscribe failed. */
  readonly #failedOn = new Set<Subscriber>();
  readonly #onError: (error: unknown, subscriber: Subscriber) => void;
  #subscribed = false;

  /**
   * Subscribes at once on each of `subscribers` (one per node that has one, of `nodes`).
   * `onError` hears why a subscribe failed (the server may refuse the command), and where.
   */
  constructor(
    readonly name: string,
    readonly publish: PublishCommand,
    subscribers: readonly Subscriber[],
    nodes: number,
    onError: (error: unknown, subscriber: Subscriber) => void,
  ) {
    this.wake = `${publish} ${name}`;
    this.#subscribers = subscribers;
    this.#nodes = nodes;
    this.#onError = onError;
    this.ready = Promise.allSettled(subscribers.map((s) => this.#subscribe(s))).then(() => {
      this.#subscribed = true;
    });
  }

  /**
   * Whether the channel is subscribed on every node: a hand-off from now on reaches a waiter
   * that watches its ticket, even one that starts watching only after the hand-off. (A
   * subscriber that drops later loses the messages sent until it is back: a waiter's polling
   * covers those.)
   */
  get listening(): boolean {
    const all = this.#subscribers.length;
    return all === this.#nodes && this.#listeningOn.size === all;
  }

  /**
   * Whether the first subscription round is over, subscribed or not: from then on, a waiter
   * that starts watching cannot have missed a message that the subscription would bring.
   */
  get subscribed(): boolean {
    return this.#subscribed;
  }

  /** The subscribers whose last subscribe succeeded. */
  listeningOn(): readonly Subscriber[] {
    return [...this.#listeningOn];
  }

  /** The subscribers whose last subscribe failed (usually none). */
  failedOn(): readonly Subscriber[] {
    return this.#failedOn.size === 0 ? NONE : [...this.#failedOn];
  }

  /**
   * Subscribes again on a (re)connected subscriber, also when its last subscribe failed.
   * `lost`: the server has no subscription there any more, whatever the client believes:
   * until the subscribe succeeds, the channel does not count as {@link listening}. Resolves
   * to whether it succeeded.
   */
  resubscribe(subscriber: Subscriber, { lost = false } = {}): Promise<boolean> {
    if (!this.#subscribers.includes(subscriber)) return Promise.resolve(false);
    if (lost) this.#listeningOn.delete(subscriber);
    // A failure is tried again at the next reconnect, or by a waiter's pause (see
    // SubscriptionCheck).
    return this.#subscribe(subscriber).then(
      () => true,
      () => false,
    );
  }

  #subscribe(subscriber: Subscriber): Promise<unknown> {
    return subscriber.subscribe(this.name).then(
      (reply) => {
        this.#listeningOn.add(subscriber);
        this.#failedOn.delete(subscriber);
        return reply;
      },
      (error: unknown) => {
        this.#listeningOn.delete(subscriber);
        this.#failedOn.add(subscriber);
        this.#onError(error, subscriber);
        throw error;
      },
    );
  }
}

const NONE: readonly Subscriber[] = [];
