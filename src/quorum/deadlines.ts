import { performance as realPerformance } from 'node:perf_hooks';
import { setTimeout as realSetTimeout } from 'node:timers';
import { type Clock, monotonicClock } from '../clock.js';

/** A fan-out waiting for its deadline (see {@link awaitDeadline}). */
export interface Expiring {
  /** When it times out, by the clock it was given. */
  readonly deadline: number;
  /** Its deadline passed before it ended. */
  expire(): void;
}

/**
 * A round's place on a line: only this small object stays on the line after the round
 * ended, until the rounds before it have ended too (a round that waits for a slow node
 * does not keep the ones behind it, and their results, alive).
 */
class Place {
  constructor(
    readonly line: DeadlineLine,
    readonly deadline: number,
    public round: Expiring | undefined,
  ) {}
}

/**
 * Timers fire up to a millisecond early by `performance.now()` (libuv keeps its clock in
 * whole ms): a deadline that close counts as reached, as the timer of a round's own did.
 */
const EARLY_MS = 1;

/** A round's wait for its deadline: its place on a shared timer's line, or a timer of its own. */
export type DeadlineWait = Place | ReturnType<typeof setTimeout>;

/**
 * Calls `round.expire()` once `round.deadline` (`delayMs` from now) has passed, unless it
 * ended by then; tell {@link roundEnded} when it ends, so that it is let go. On the process's
 * own clock and timers, rounds share one timer per timeout: a timer per round cost every
 * operation a Node timer to arm, unref and clear, about 3.5 µs of an acquire + release
 * before V8 optimizes distlock's code (which at a few locks a second it never does) and
 * 0.35 µs after. Under fake timers (a user's tests, the simulation) or another clock, each
 * round has a timer of its own, as the timers' owner expects.
 */
export function awaitDeadline(
  round: Expiring,
  timeoutMs: number,
  clock: Clock,
  delayMs: number,
): DeadlineWait {
  if (clock !== monotonicClock || !realTimers()) {
    const timer = setTimeout(expire, delayMs, round);
    timer.unref?.();
    return timer;
  }
  const line = lineFor(timeoutMs);
  const place = new Place(line, round.deadline, round);
  line.add(place);
  return place;
}

/** The round awaited by `wait` ended: its place, and the ended ones behind it, leave the line. */
export function roundEnded(wait: DeadlineWait): void {
  if (wait instanceof Place) {
    wait.round = undefined;
    wait.line.dropEnded();
  } else clearTimeout(wait);
}

/** Whether `setTimeout` and `performance` are Node's own, not fakes. */
function realTimers(): boolean {
  return setTimeout === realSetTimeout && performance === realPerformance;
}

/** A round's own timer: a plain function given the round, so that arming it makes no closure. */
function expire(round: Expiring): void {
  round.expire();
}

let lastTimeoutMs = -1;
let lastLine: DeadlineLine | undefined;
/** Lines by timeout (on the monotonic clock and Node's own timers). */
const lines = new Map<number, DeadlineLine>();
/** Lines kept beyond which the empty ones are let go (timeouts follow TTLs, which vary). */
const LINES_KEPT = 32;

function lineFor(timeoutMs: number): DeadlineLine {
  if (timeoutMs === lastTimeoutMs && lastLine) return lastLine;
  let line = lines.get(timeoutMs);
  if (!line) {
    if (lines.size >= LINES_KEPT) {
      for (const [timeout, kept] of lines) if (kept.empty) lines.delete(timeout);
      lastLine = undefined;
    }
    line = new DeadlineLine();
    lines.set(timeoutMs, line);
  }
  lastTimeoutMs = timeoutMs;
  lastLine = line;
  return line;
}

/**
 * The rounds awaiting one timeout, by deadline (those with one timeout begin, and so end, in
 * order), and one unref'ed timer armed for the first of them. On the monotonic clock: a line
 * serves only rounds on it (see `awaitDeadline`).
 */
class DeadlineLine {
  /** Places by deadline, from `#first` on (the slots before it are emptied). */
  #places: (Place | undefined)[] = [];
  #first = 0;
  /** The one timer armed, and when it fires (infinite while none is). */
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedFor = Number.POSITIVE_INFINITY;

  /** Whether no round waits on the line (its timer, if armed, will find nothing to do). */
  get empty(): boolean {
    return this.#first === this.#places.length;
  }

  add(place: Place): void {
    const places = this.#places;
    let at = places.length;
    // Only a round put back for the rest of a longer timeout can have a deadline before others'.
    while (at > this.#first && (places[at - 1] as Place).deadline > place.deadline) at--;
    if (at === places.length) places.push(place);
    else places.splice(at, 0, place);
    if (place.deadline < this.#armedFor) this.#arm(place.deadline);
  }

  dropEnded(): void {
    const places = this.#places;
    let first = this.#first;
    while (first < places.length && (places[first] as Place).round === undefined) {
      places[first++] = undefined;
    }
    this.#settle(first);
  }

  /** The timer: expires the rounds whose deadline passed, then waits for the next one. */
  fire(): void {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const places = this.#places;
    const due = monotonicClock.now() + EARLY_MS;
    let first = this.#first;
    const expired: Expiring[] = [];
    for (; first < places.length; first++) {
      const place = places[first] as Place;
      if (place.round !== undefined && place.deadline > due) break;
      places[first] = undefined;
      if (place.round !== undefined) expired.push(place.round);
    }
    this.#settle(first);
    const next = this.#places[this.#first];
    if (next) this.#arm(next.deadline);
    // Last: an expiry may add rounds (a release's rest of its timeout) to this very line.
    for (const round of expired) round.expire();
  }

  /** Moves the front to `first`, and lets go of the emptied slots once they are many. */
  #settle(first: number): void {
    const places = this.#places;
    if (first === places.length) {
      places.length = 0;
      this.#first = 0;
    } else if (first > 64 && first * 2 > places.length) {
      this.#places = places.slice(first);
      this.#first = 0;
    } else this.#first = first;
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer); // armed for later: one timer only
    this.#armedFor = at;
    const timer = setTimeout(fire, Math.max(0, Math.ceil(at - monotonicClock.now())), this);
    timer.unref();
    this.#timer = timer;
  }
}

/** A line's timer: a plain function given the line, so that arming it makes no closure. */
function fire(line: DeadlineLine): void {
  line.fire();
}
