import type { Subscriber } from '../../driver/connection.js';
import type { LockContext } from '../../engine/context.js';
import { sleep, type WaitStops } from '../../engine/sleep.js';
import { LockerClosedError, NoQuorumError } from '../../errors.js';
import type { ElectionKeys } from './election-keys.js';
import type { ElectionSettings } from './election-options.js';
import { type Leader, readLeader } from './leader-read.js';

/**
 * The leader now, then after each change: a read of every node (as `Election.leader`) at the
 * start, on every change message (and every reconnect of a subscriber, which may have missed
 * some), and every `retryMs` in any case; each read that differs from the last yielded is
 * yielded. A read that fails (too few nodes answered) yields nothing; a configuration that
 * the nodes' identity check refuses (one server listed twice) ends it with that error. Ends
 * when `signal` aborts, the locker closes, or the consumer stops iterating.
 */
export async function* observeLeader(
  context: LockContext,
  keys: ElectionKeys,
  settings: ElectionSettings,
  signal: AbortSignal | undefined,
): AsyncGenerator<Leader | null, void, undefined> {
  const stops: WaitStops = {
    what: `Observing "${keys.name}"`,
    signal,
    closed: context.shutdown.signal,
  };
  const changes = new ChangeFeed(context, keys.changes);
  try {
    if (!(await pause(settings.retryMs, stops, changes.subscribed))) return;
    let last: Leader | null | undefined;
    for (;;) {
      const seen = changes.count;
      const current = await readLeader(context, keys, settings.leaseMs).catch(unlessRefused);
      if (current !== undefined && (last === undefined || !sameLeader(current, last))) {
        last = current;
        yield current;
      }
      if (!(await pause(settings.retryMs, stops, changes.after(seen)))) return;
    }
  } finally {
    changes.close();
  }
}

/**
 * A read that too few nodes answered counts as none, and so does one that the locker's close
 * stopped (the pause that follows ends the loop); any other error is the caller's.
 */
function unlessRefused(error: unknown): undefined {
  if (error instanceof NoQuorumError || error instanceof LockerClosedError) return undefined;
  throw error;
}

/** Waits `ms` or until `wake`; false when a stop ended the wait. */
function pause(ms: number, stops: WaitStops, wake: Promise<void>): Promise<boolean> {
  return sleep(ms, stops, wake).then(
    () => true,
    () => false,
  );
}

function sameLeader(a: Leader | null, b: Leader | null): boolean {
  if (a === null || b === null) return a === b;
  return a.term === b.term && a.value === b.value;
}

/**
 * The election's change channel, subscribed on every node that offers pub/sub: counts the
 * messages (and reconnects), and wakes whoever waits for the next one.
 */
class ChangeFeed {
  /** Messages and reconnects so far. */
  count = 0;
  /** Resolves once the first subscribe on every node settled. */
  readonly subscribed: Promise<void>;
  readonly #subscribers: Subscriber[];
  #wake: (() => void) | undefined;
  #closed = false;
  readonly #onClose = () => this.close();

  constructor(
    private readonly context: LockContext,
    channel: string,
  ) {
    this.#subscribers = context.nodes.flatMap((node) => {
      const open = node.pubSub;
      if (!open) return [];
      const subscriber: Subscriber = open(
        (on: string) => {
          if (on === channel) this.#changed();
        },
        () => {
          if (this.#closed) return;
          subscriber.subscribe(channel).catch(() => undefined); // retried at the next reconnect
          this.#changed(); // it may have missed messages while down
        },
      );
      return [subscriber];
    });
    this.subscribed = Promise.allSettled(this.#subscribers.map((s) => s.subscribe(channel))).then(
      () => undefined,
    );
    context.shutdown.signal.addEventListener('abort', this.#onClose, { once: true });
  }

  /** Resolves once more than `seen` messages came. */
  after(seen: number): Promise<void> {
    if (this.count > seen) return Promise.resolve();
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.context.shutdown.signal.removeEventListener('abort', this.#onClose);
    for (const subscriber of this.#subscribers) subscriber.close().catch(() => undefined);
  }

  #changed(): void {
    this.count++;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
