import type { RedisConnection, Subscriber } from '../driver/connection.js';

/** A waiter's interest in the wake-ups for its ticket. */
export interface Watch {
  /** Resolves once the locker's channel is subscribed on every node that could be (or failed). */
  readonly ready: Promise<void>;
  /** Wake-ups seen so far for the ticket. */
  seen(): number;
  /** Resolves when more than `seen` wake-ups came; `cancel` drops the interest. */
  next(seen: number): { wake: Promise<void>; cancel: () => void };
  /** Ends the interest. */
  dispose(): void;
}

/** After close: no subscription, waiters just poll. */
const POLLING_ONLY: Watch = {
  ready: Promise.resolve(),
  seen: () => 0,
  next: () => ({ wake: new Promise<void>(() => {}), cancel: () => {} }),
  dispose: () => {},
};

const WOKEN = { wake: Promise.resolve(), cancel: () => {} };

/**
 * One waiter's watch on its ticket: the wake-ups it got, and the pause that the next one ends.
 * A class rather than closures: thousands of waiters each keep one.
 */
class TicketWatch implements Watch {
  /** Wake-ups seen so far. */
  #wakes: number;
  /** Resolves the current pause's `wake`; a waiter pauses once at a time. */
  #waker: (() => void) | undefined;
  #disposed = false;
  readonly #cancel = () => {
    this.#waker = undefined;
  };

  /** `watching`: the locker's watches by ticket, which this one leaves when disposed. */
  constructor(
    readonly ready: Promise<void>,
    wakes: number,
    private readonly ticket: string,
    private readonly watching: Map<string, TicketWatch>,
  ) {
    this.#wakes = wakes;
  }

  seen(): number {
    return this.#wakes;
  }

  next(seen: number): { wake: Promise<void>; cancel: () => void } {
    if (this.#wakes > seen) return WOKEN;
    const wake = new Promise<void>((resolve) => {
      this.#waker = resolve;
    });
    return { wake, cancel: this.#cancel };
  }

  /** A release named this ticket. */
  wakeUp(): void {
    this.#wakes++;
    const waker = this.#waker;
    this.#waker = undefined;
    waker?.();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.watching.get(this.ticket) === this) this.watching.delete(this.ticket);
  }
}

/**
 * Wakes a waiting acquirer the moment a release hands it the lock, instead of letting it
 * sleep out its retry delay. The locker has one channel of its own (see `wakeChannel`),
 * subscribed on one subscriber connection per node when it first waits and renewed whenever
 * a subscriber reconnects; each message names the waiter by its ticket, so no subscription
 * is made or dropped per wait. A missed message costs at most the polling delay, which never
 * exceeds the holder's lease.
 */
export class WakeUps {
  readonly #nodes: readonly RedisConnection[];
  readonly #channel: string;
  #subscribers: Subscriber[] | undefined;
  #ready: Promise<void> | undefined;
  /** Subscribers whose last subscribe succeeded. */
  readonly #listeningOn = new Set<Subscriber>();
  #subscribed = false;
  readonly #tickets = new Map<string, TicketWatch>();
  /**
   * Tickets woken before their waiter started watching: the hand-off can overtake the reply
   * to the attempt that joined the line. Tickets are never reused, so a few suffice.
   */
  readonly #unclaimed = new Set<string>();
  #closed = false;

  /** `channel`: the locker's own wake-up channel. */
  constructor(nodes: readonly RedisConnection[], channel: string) {
    this.#nodes = nodes;
    this.#channel = channel;
  }

  /** The channel a release names to wake this locker's waiters. */
  get channel(): string {
    return this.#channel;
  }

  /**
   * Whether the channel was subscribed on every node: a hand-off from now on reaches a waiter
   * that watches its ticket, even one that starts watching only after the hand-off. (A
   * subscriber that drops later loses the messages sent until it is back: a waiter's polling
   * covers those.)
   */
  get listening(): boolean {
    const all = this.#subscribers?.length ?? 0;
    return all === this.#nodes.length && this.#listeningOn.size === all;
  }

  /**
   * Whether the first subscription round is over, subscribed or not: from then on, a waiter
   * that starts watching cannot have missed a message that the subscription would bring.
   */
  get subscribed(): boolean {
    return this.#subscribed;
  }

  watch(ticket: number): Watch {
    if (this.#closed) return POLLING_ONLY;
    const name = String(ticket); // as Redis prints a score below 2^53
    const wakes = this.#unclaimed.delete(name) ? 1 : 0;
    const watch = new TicketWatch(this.#opened(), wakes, name, this.#tickets);
    this.#tickets.set(name, watch);
    return watch;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const subscribers = this.#subscribers ?? [];
    this.#subscribers = undefined;
    this.#tickets.clear();
    this.#unclaimed.clear();
    this.#listeningOn.clear();
    await Promise.all(subscribers.map((subscriber) => subscriber.close()));
  }

  #opened(): Promise<void> {
    if (this.#ready) return this.#ready;
    this.#subscribers = this.#nodes.flatMap((node) => {
      if (!node.openSubscriber) return [];
      const subscriber = node.openSubscriber(
        (channel, message) => this.#announce(channel, message),
        () => this.#resubscribe(subscriber),
      );
      return [subscriber];
    });
    const subscribing = this.#subscribers.map((s) => this.#subscribe(s));
    this.#ready = Promise.allSettled(subscribing).then(() => {
      this.#subscribed = true;
    });
    return this.#ready;
  }

  /**
   * Subscribes a (re)connected subscriber to the locker's channel, also when its subscribe
   * failed while it was down. A channel subscribed twice is harmless.
   */
  #resubscribe(subscriber: Subscriber): void {
    if (this.#closed) return;
    this.#subscribe(subscriber).catch(() => undefined); // retried at the next reconnect
  }

  #subscribe(subscriber: Subscriber): Promise<unknown> {
    return subscriber.subscribe(this.#channel).then(
      (reply) => {
        this.#listeningOn.add(subscriber);
        return reply;
      },
      (error: unknown) => {
        this.#listeningOn.delete(subscriber);
        throw error;
      },
    );
  }

  /** Wakes the waiter named by `message`; every waiter when the adapter gives no payload. */
  #announce(channel: string, message: string | undefined): void {
    if (channel !== this.#channel) return;
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

/** At most this many unclaimed wake-ups are kept (the oldest goes first). */
const UNCLAIMED_KEPT = 256;

/**
 * One acquisition's use of wake-ups, from its first busy attempt on: each pause ends early
 * when the lock was handed to it since the attempt began.
 */
export class Waiter {
  readonly #wakeUps: WakeUps;
  readonly #ticket: number;
  #watch: Watch | undefined;
  #seen = 0;

  /** `ticket`: the acquisition's place in line, which wake-up messages name. */
  constructor(wakeUps: WakeUps, ticket: number) {
    this.#wakeUps = wakeUps;
    this.#ticket = ticket;
  }

  /** Call as an attempt begins: a wake-up from now on cuts the next pause short. */
  attemptBegins(): void {
    this.#seen = this.#watch?.seen() ?? 0;
  }

  /** Starts listening; resolves once subscribed (or subscribing failed). */
  listen(): Promise<void> {
    this.#watch ??= this.#wakeUps.watch(this.#ticket);
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
