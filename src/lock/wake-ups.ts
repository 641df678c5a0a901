import type { RedisConnection, Subscriber } from '../driver/connection.js';

/** A waiter's interest in one release channel. */
export interface Watch {
  /** Resolves once the channel is subscribed on every node that could be (or failed). */
  readonly ready: Promise<void>;
  /** Releases seen so far on the channel. */
  seen(): number;
  /** Resolves when more than `seen` releases were announced; `cancel` drops the interest. */
  next(seen: number): { wake: Promise<void>; cancel: () => void };
  /** Ends the interest; the last one out unsubscribes. */
  dispose(): void;
}

/** After close: no subscription, waiters just poll. */
const POLLING_ONLY: Watch = {
  ready: Promise.resolve(),
  seen: () => 0,
  next: () => ({ wake: new Promise<void>(() => {}), cancel: () => {} }),
  dispose: () => {},
};

interface Channel {
  refs: number;
  releases: number;
  readonly wakers: Set<() => void>;
  readonly ready: Promise<void>;
}

/**
 * Wakes waiting acquirers the moment a lock is released, instead of letting them sleep out
 * their retry delay: one shared subscriber connection per node (opened on first need), one
 * subscription per resource that someone waits for, dropped when the last waiter leaves, and
 * renewed whenever a subscriber reconnects. A missed message costs at most the polling
 * delay, which never exceeds the holder's lease.
 */
export class WakeUps {
  readonly #nodes: readonly RedisConnection[];
  #subscribers: Subscriber[] | undefined;
  readonly #channels = new Map<string, Channel>();
  #closed = false;

  constructor(nodes: readonly RedisConnection[]) {
    this.#nodes = nodes;
  }

  watch(name: string): Watch {
    if (this.#closed) return POLLING_ONLY;
    const channel = this.#channels.get(name) ?? this.#open(name);
    channel.refs++;
    let disposed = false;
    return {
      ready: channel.ready,
      seen: () => channel.releases,
      next: (seen) => {
        if (channel.releases > seen) return { wake: Promise.resolve(), cancel: () => {} };
        let waker!: () => void;
        const wake = new Promise<void>((resolve) => {
          waker = resolve;
        });
        channel.wakers.add(waker);
        return { wake, cancel: () => channel.wakers.delete(waker) };
      },
      dispose: () => {
        if (disposed) return;
        disposed = true;
        if (--channel.refs > 0 || this.#channels.get(name) !== channel) return;
        this.#channels.delete(name);
        for (const subscriber of this.#subscribers ?? []) {
          subscriber.unsubscribe(name).catch(() => undefined); // a dead subscriber has none
        }
      },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const subscribers = this.#subscribers ?? [];
    this.#subscribers = undefined;
    this.#channels.clear();
    await Promise.all(subscribers.map((subscriber) => subscriber.close()));
  }

  #open(name: string): Channel {
    this.#subscribers ??= this.#nodes.flatMap((node) => {
      if (!node.openSubscriber) return [];
      const subscriber = node.openSubscriber(
        (channel) => this.#announce(channel),
        () => this.#resubscribe(subscriber),
      );
      return [subscriber];
    });
    const ready = Promise.allSettled(this.#subscribers.map((s) => s.subscribe(name))).then(
      () => {},
    );
    const channel: Channel = { refs: 0, releases: 0, wakers: new Set(), ready };
    this.#channels.set(name, channel);
    return channel;
  }

  /**
   * Subscribes a (re)connected subscriber to every channel someone waits on, including those
   * whose subscribe failed while it was down. A channel subscribed twice is harmless.
   */
  #resubscribe(subscriber: Subscriber): void {
    if (this.#closed) return;
    for (const name of this.#channels.keys()) {
      subscriber.subscribe(name).catch(() => undefined); // retried at the next reconnect
    }
  }

  #announce(name: string): void {
    const channel = this.#channels.get(name);
    if (!channel) return;
    channel.releases++;
    for (const wake of channel.wakers) wake();
    channel.wakers.clear();
  }
}

/**
 * One acquisition's use of wake-ups, from its first busy attempt on: each pause ends early
 * when a release was announced since the attempt began.
 */
export class Waiter {
  readonly #wakeUps: WakeUps;
  readonly #channel: string;
  #watch: Watch | undefined;
  #seen = 0;

  /** `channel`: the resource's release channel, or a fair waiter's own turn channel. */
  constructor(wakeUps: WakeUps, channel: string) {
    this.#wakeUps = wakeUps;
    this.#channel = channel;
  }

  /** Call as an attempt begins: a release announced from now on cuts the next pause short. */
  attemptBegins(): void {
    this.#seen = this.#watch?.seen() ?? 0;
  }

  /** Starts listening; resolves once subscribed (or subscribing failed). */
  listen(): Promise<void> {
    this.#watch ??= this.#wakeUps.watch(this.#channel);
    return this.#watch.ready;
  }

  /**
   * What ends the next pause early: a release announced since the attempt began. `cancel`
   * must follow the pause.
   */
  nextRelease(): { wake: Promise<void>; cancel: () => void } | undefined {
    return this.#watch?.next(this.#seen);
  }

  /** Stops listening (the last listener of a channel unsubscribes). */
  dispose(): void {
    this.#watch?.dispose();
  }
}
