/**
 * The virtual clock a schedule's timers run on: `setTimeout`, `setInterval`, their clears,
 * `Date` and `timers/promises`' `setTimeout`, replaced while a schedule runs. Timers fire in
 * the order of their due time, then of their creation (a rescheduled interval counts as new),
 * as `@sinonjs/fake-timers` orders them, whose rules it keeps (a delay is whole ms, truncated;
 * one that is not finite is 0, and one over 2^31 - 1 is 1), so that a seed gives the history
 * it gave on fake-timers. It does only what the simulation needs, about five times faster
 * (a schedule sets some thousands of timers).
 */
import timersPromises from 'node:timers/promises';

const MAX_TIMEOUT = 2 ** 31 - 1;
/** The first timer id: above any real timer's, as fake-timers numbers them. */
const FIRST_ID = 1e12;

interface Timer {
  readonly id: number;
  readonly callback: (...args: unknown[]) => void;
  readonly args: unknown[];
  readonly delay: number;
  readonly interval: number | undefined;
  callAt: number;
  order: number;
  /** Its place in the heap; -1 once it fired (not an interval) or was cleared. */
  index: number;
}

/** What `setTimeout` returns: the part of Node's `Timeout` the engine uses. */
class TimerHandle {
  #refed = true;
  constructor(
    readonly timer: Timer,
    readonly clock: VirtualClock,
  ) {}

  ref(): this {
    this.#refed = true;
    return this;
  }

  unref(): this {
    this.#refed = false;
    return this;
  }

  hasRef(): boolean {
    return this.#refed;
  }

  refresh(): this {
    this.clock.refresh(this.timer);
    return this;
  }

  [Symbol.toPrimitive](): number {
    return this.timer.id;
  }
}

function delayOf(ms: unknown): number {
  let delay = typeof ms === 'number' ? ms : Number.parseInt(String(ms), 10);
  if (!Number.isFinite(delay)) delay = 0;
  if (delay > MAX_TIMEOUT) delay = 1;
  return Math.max(0, delay);
}

export class VirtualClock {
  now: number;
  readonly #heap: Timer[] = [];
  readonly #byId = new Map<number, Timer>();
  #nextId = FIRST_ID;
  #nextOrder = 0;
  /** True while a timer's callback runs: a 0 ms timer set then waits 1 ms. */
  #duringTick = false;

  constructor(now: number) {
    this.now = now;
  }

  setTimeout(
    callback: (...args: unknown[]) => void,
    ms?: unknown,
    ...args: unknown[]
  ): TimerHandle {
    return this.#add(callback, delayOf(ms), undefined, args);
  }

  /** An interval's period is whole ms too (`parseInt` first, as fake-timers does). */
  setInterval(
    callback: (...args: unknown[]) => void,
    ms?: unknown,
    ...args: unknown[]
  ): TimerHandle {
    const period = Number.parseInt(String(ms), 10);
    const interval = Number.isFinite(period) && period <= MAX_TIMEOUT ? period : 1;
    return this.#add(callback, delayOf(period), interval, args);
  }

  clear(handle: unknown): void {
    if (!handle) return;
    const timer = this.#byId.get(Number(handle));
    if (!timer) return;
    this.#byId.delete(timer.id);
    this.#remove(timer);
  }

  /** Fires the first due timer, moving the clock to its time; false when there is none. */
  fireNext(): boolean {
    const timer = this.#heap[0];
    if (!timer) return false;
    this.now = timer.callAt;
    this.#remove(timer);
    if (timer.interval === undefined) this.#byId.delete(timer.id);
    else {
      timer.callAt += timer.interval;
      timer.order = this.#nextOrder++;
      this.#push(timer);
    }
    this.#duringTick = true;
    try {
      timer.callback(...timer.args);
    } finally {
      this.#duringTick = false;
    }
    return true;
  }

  refresh(timer: Timer): void {
    this.#remove(timer);
    timer.callAt = this.now + this.#wait(timer.delay);
    timer.order = this.#nextOrder++;
    this.#byId.set(timer.id, timer);
    this.#push(timer);
  }

  /**
   * fake-timers' whole ms: `parseInt(String(delay))`, which truncates, except below 1e-6,
   * written with an exponent (5e-7 waits 5 ms there, and here).
   */
  #wait(delay: number): number {
    const whole = delay >= 1e-6 ? Math.trunc(delay) : Number.parseInt(String(delay), 10);
    return whole || (this.#duringTick ? 1 : 0);
  }

  #add(
    callback: (...args: unknown[]) => void,
    delay: number,
    interval: number | undefined,
    args: unknown[],
  ): TimerHandle {
    if (typeof callback !== 'function') throw new TypeError('Callback must be a function');
    const timer: Timer = {
      id: this.#nextId++,
      callback,
      args,
      delay,
      interval,
      callAt: this.now + this.#wait(delay),
      order: this.#nextOrder++,
      index: -1,
    };
    this.#byId.set(timer.id, timer);
    this.#push(timer);
    return new TimerHandle(timer, this);
  }

  // A binary heap by (callAt, order).

  #before(a: Timer, b: Timer): boolean {
    return a.callAt < b.callAt || (a.callAt === b.callAt && a.order < b.order);
  }

  #push(timer: Timer): void {
    timer.index = this.#heap.length;
    this.#heap.push(timer);
    this.#up(timer.index);
  }

  #remove(timer: Timer): void {
    const i = timer.index;
    if (i < 0) return;
    timer.index = -1;
    const last = this.#heap.pop() as Timer;
    if (last === timer) return;
    this.#heap[i] = last;
    last.index = i;
    this.#up(i);
    this.#down(last.index);
  }

  #up(i: number): void {
    const heap = this.#heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(heap[i] as Timer, heap[parent] as Timer)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const heap = this.#heap;
    for (;;) {
      const [left, right] = [2 * i + 1, 2 * i + 2];
      let first = i;
      if (left < heap.length && this.#before(heap[left] as Timer, heap[first] as Timer))
        first = left;
      if (right < heap.length && this.#before(heap[right] as Timer, heap[first] as Timer))
        first = right;
      if (first === i) return;
      this.#swap(i, first);
      i = first;
    }
  }

  #swap(i: number, j: number): void {
    const heap = this.#heap;
    const [a, b] = [heap[i] as Timer, heap[j] as Timer];
    heap[i] = b;
    heap[j] = a;
    a.index = j;
    b.index = i;
  }
}

/** What `install` replaced, to put back. */
export interface Installed {
  uninstall(): void;
}

/**
 * Makes `clock` the globals' timers and `Date` (and `timers/promises`' `setTimeout`).
 * `wrap` adjusts the delays given to the global `setTimeout` and `setInterval`.
 */
export function installClock(clock: VirtualClock, wrap: (ms: unknown) => unknown): Installed {
  const globals = globalThis as unknown as Record<string, unknown>;
  const saved = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'].map(
    (name) => [name, globals[name]] as const,
  );
  const promisesSetTimeout = timersPromises.setTimeout;
  const NativeDate = Date;
  globals.setTimeout = (callback: () => void, ms?: unknown, ...args: unknown[]) =>
    clock.setTimeout(callback, wrap(ms), ...args);
  globals.setInterval = (callback: () => void, ms?: unknown, ...args: unknown[]) =>
    clock.setInterval(callback, wrap(ms), ...args);
  globals.clearTimeout = (handle: unknown) => clock.clear(handle);
  globals.clearInterval = (handle: unknown) => clock.clear(handle);
  globals.Date = virtualDate(NativeDate, clock);
  (timersPromises as { setTimeout: unknown }).setTimeout = <T>(
    ms?: number,
    value?: T,
    options: { signal?: AbortSignal } = {},
  ) =>
    new Promise<T | undefined>((resolve, reject) => {
      const { signal } = options;
      const abort = () => {
        signal?.removeEventListener('abort', abort);
        clock.clear(handle);
        reject(signal?.reason);
      };
      const handle = clock.setTimeout(() => {
        signal?.removeEventListener('abort', abort);
        resolve(value);
      }, ms);
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort);
    });
  return {
    uninstall() {
      for (const [name, value] of saved) globals[name] = value;
      (timersPromises as { setTimeout: unknown }).setTimeout = promisesSetTimeout;
    },
  };
}

/** `Date` reading the virtual clock when asked for now (`new Date()`, `Date.now()`, `Date()`). */
function virtualDate(NativeDate: DateConstructor, clock: VirtualClock): DateConstructor {
  class VirtualDate extends NativeDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(clock.now);
      else super(...(args as [string]));
    }

    static override now(): number {
      return clock.now;
    }
  }
  const callable = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new NativeDate(clock.now).toString();
    return Reflect.construct(VirtualDate, args, new.target);
  } as unknown as DateConstructor;
  Object.setPrototypeOf(callable, VirtualDate);
  Object.defineProperty(callable, 'prototype', { value: VirtualDate.prototype });
  return callable;
}
