import type { HandOver, WakeUps, Watch } from './wake-ups.js';

/**
 * One acquisition's use of wake-ups, from its first busy attempt on: each pause ends early
 * when the lock was handed to it since the attempt began. An acquisition that got the lock
 * after a pause that no message ended, while its channel counted as subscribed, tells
 * {@link WakeUps} (the subscription may be lost: see `SubscriptionCheck`).
 */
export class Waiter {
  readonly #wakeUps: WakeUps;
  readonly #ticket: number;
  readonly #key: string;
  #watch: Watch | undefined;
  #seen = 0;
  /** Whether the last pause began while the channel counted as subscribed. */
  #pausedListening = false;
  /** Whether the attempt under way follows such a pause that no wake-up ended. */
  #unwoken = false;
  /** Whether a wake-up came since the previous attempt began. */
  #woken = false;
  /** Whether the next attempt counts as woken, a wake-up having perhaps been missed. */
  #missed = false;

  /** `ticket`: the acquisition's place in line, which wake-up messages name; `key`: its lock. */
  constructor(wakeUps: WakeUps, ticket: number, key: string) {
    this.#wakeUps = wakeUps;
    this.#ticket = ticket;
    this.#key = key;
  }

  /** Call as an attempt begins: a wake-up from now on cuts the next pause short. */
  attemptBegins(): void {
    const seen = this.#watch?.seen() ?? 0;
    this.#woken = seen !== this.#seen || this.#missed;
    this.#missed = false;
    this.#unwoken = this.#pausedListening && !this.#woken;
    this.#pausedListening = false;
    this.#seen = seen;
  }

  /**
   * Whether the attempt under way began after a wake-up. When it still finds the lock taken,
   * a release left it free within its barging window and its holder took it back: the first
   * release after the window hands it over, and the waiter asks once more when the window is
   * over, in case nobody took it back.
   */
  get woken(): boolean {
    return this.#woken;
  }

  /**
   * Call when wake-ups may have been missed (they were sent before the channel was
   * subscribed): the next attempt counts as {@link woken}.
   */
  mayHaveMissedWakeUps(): void {
    this.#missed = true;
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
    if (!this.#watch) return undefined;
    this.#pausedListening = this.#wakeUps.pausing(this.#key);
    return this.#watch.next(this.#seen);
  }

  /**
   * The hand-over whose wake-up named an attempt, once: each is given out a single time, so
   * that one that could not count is never counted later.
   */
  takeHandOver(): HandOver | undefined {
    return this.#watch?.takeHandOver();
  }

  /** Call when an attempt got the lock. */
  acquired(): void {
    if (this.#unwoken) this.#wakeUps.unanswered(this.#key);
  }

  /** Stops listening. */
  dispose(): void {
    this.#watch?.dispose();
  }
}
