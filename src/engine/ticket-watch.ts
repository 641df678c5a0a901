/**
 * A release that handed the lock over and said so: the node it came from (an index) and the
 * attempt of the waiter's whose request there the hand-over counts from (see `handOver` in
 * LOCK_LINE).
 */
export interface HandOver {
  readonly node: number;
  readonly attempt: number;
}

/** A waiter's interest in the wake-ups for its ticket. */
export interface Watch {
  /** Resolves once the channel that wakes the waiter is subscribed on every node (or failed). */
  readonly ready: Promise<void>;
  /** Wake-ups seen so far for the ticket. */
  seen(): number;
  /** Resolves when more than `seen` wake-ups came; `cancel` drops the interest. */
  next(seen: number): { wake: Promise<void>; cancel: () => void };
  /** The last hand-over whose wake-up named an attempt, if one came since the last take. */
  takeHandOver(): HandOver | undefined;
  /** Ends the interest. */
  dispose(): void;
}

/** After close: no subscription, waiters just poll. */
export const POLLING_ONLY: Watch = {
  ready: Promise.resolve(),
  seen: () => 0,
  next: () => ({ wake: new Promise<void>(() => {}), cancel: () => {} }),
  takeHandOver: () => undefined,
  dispose: () => {},
};

const WOKEN = { wake: Promise.resolve(), cancel: () => {} };

/**
 * One waiter's watch on its ticket: the wake-ups it got, and the pause that the next one ends.
 * A class rather than closures: thousands of waiters each keep one.
 */
export class TicketWatch implements Watch {
  /** Wake-ups seen so far. */
  #wakes: number;
  /** Resolves the current pause's `wake`; a waiter pauses once at a time. */
  #waker: (() => void) | undefined;
  #handOver: HandOver | undefined;
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

  takeHandOver(): HandOver | undefined {
    const handOver = this.#handOver;
    this.#handOver = undefined;
    return handOver;
  }

  /** A release named this ticket (and, in `handOver`, the attempt it counts from). */
  wakeUp(handOver?: HandOver): void {
    if (handOver) this.#handOver = handOver;
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
