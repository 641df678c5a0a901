/**
 * The simulation's virtual clock (simulation/virtual-clock.ts) against @sinonjs/fake-timers,
 * whose rules it keeps so that seeds replay the histories they gave on it: random programs of
 * timers (set from timers and from outside them, cleared, repeating, with whole, fractional,
 * zero, huge and non-finite delays) fire in the same order at the same times. Not `refresh()`,
 * which nothing in the engine calls: fake-timers changes a timer's due time before taking it
 * out of its heap, which can leave the heap out of order.
 */
import FakeTimers from '@sinonjs/fake-timers';
import { describe, expect, it } from 'vitest';
import { Random } from '../../simulation/random.js';
import { installClock, VirtualClock } from '../../simulation/virtual-clock.js';

const DELAYS = [
  0,
  1,
  1,
  2,
  2.5,
  3,
  7,
  10,
  0.4,
  1e-7,
  2 ** 31,
  Number.POSITIVE_INFINITY,
  Number.NaN,
];

interface Timers {
  now(): number;
  set(callback: () => void, ms: number, repeat: boolean): unknown;
  clear(handle: unknown): void;
  /** Fires the next timer; false when none is left. */
  next(): boolean;
}

function fakeTimers(): Timers {
  const clock = FakeTimers.createClock(1_000) as FakeTimers.Clock;
  return {
    now: () => clock.now,
    set: (callback, ms, repeat) =>
      repeat ? clock.setInterval(callback, ms) : clock.setTimeout(callback, ms),
    clear: (handle) => clock.clearTimeout(handle as FakeTimers.TimerId),
    next: () => {
      if (clock.countTimers() === 0) return false;
      clock.next();
      return true;
    },
  };
}

function virtualClock(): Timers {
  const clock = new VirtualClock(1_000);
  return {
    now: () => clock.now,
    set: (callback, ms, repeat) =>
      repeat ? clock.setInterval(callback, ms) : clock.setTimeout(callback, ms),
    clear: (handle) => clock.clear(handle),
    next: () => clock.fireNext(),
  };
}

/** Runs one random program on `timers`; returns what fired, when. */
function run(seed: number, timers: Timers): string[] {
  const r = new Random(seed);
  const fired: string[] = [];
  const handles: unknown[] = [];
  let made = 0;
  const make = (depth: number) => {
    const name = `t${made++}`;
    const repeat = r.chance(0.1);
    let runs = 0;
    const handle = timers.set(
      () => {
        fired.push(`${name}@${timers.now()}`);
        if (repeat && ++runs >= 3) timers.clear(handle);
        if (depth < 3 && r.chance(0.5)) make(depth + 1); // set from inside a timer
        if (r.chance(0.2) && handles.length > 0) timers.clear(r.pick(handles));
      },
      r.pick(DELAYS),
      repeat,
    );
    handles.push(handle);
  };
  for (let i = 0; i < 20; i++) make(0);
  for (let steps = 0; steps < 500 && timers.next(); steps++) {
    if (r.chance(0.05)) make(1); // set between timers, outside any
  }
  return fired;
}

describe("the simulation's virtual clock", () => {
  it('fires timers in the order, and at the times, fake-timers fires them', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const expected = run(seed, fakeTimers());
      expect(run(seed, virtualClock()), `seed ${seed}`).toEqual(expected);
    }
  });

  it('replaces the globals, Date and timers/promises while installed, and puts them back', async () => {
    const { setTimeout: before } = globalThis;
    const clock = new VirtualClock(Date.UTC(2026, 0, 1));
    const installed = installClock(clock, (ms) => ms);
    try {
      const delay = (await import('node:timers/promises')).default.setTimeout;
      const order: string[] = [];
      globalThis.setTimeout(() => order.push('global'), 5);
      void delay(3, 'promised').then((value) => order.push(value as string));
      const aborted = new AbortController();
      const cancelled = delay(4, 'never', { signal: aborted.signal }).catch(() => 'aborted');
      aborted.abort();
      expect(new Date().toISOString()).toBe('2026-01-01T00:00:00.000Z');
      expect(Date.now()).toBe(clock.now);
      while (clock.fireNext()) await new Promise((resolve) => setImmediate(resolve));
      expect(order).toEqual(['promised', 'global']);
      expect(await cancelled).toBe('aborted');
      expect(new Date(0).getTime()).toBe(0); // a time given is kept, not the virtual now
      expect(Date.now()).toBe(Date.UTC(2026, 0, 1) + 5);
    } finally {
      installed.uninstall();
    }
    expect(globalThis.setTimeout).toBe(before);
    expect(Math.abs(Date.now() - (performance.timeOrigin + performance.now()))).toBeLessThan(1_000);
  });
});
