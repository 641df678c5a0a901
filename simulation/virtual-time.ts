/**
 * Virtual time and seeded randomness for one schedule of the simulation.
 *
 * The engine reads time and chance through globals: `setTimeout`/`clearTimeout` (sleeps, the
 * watchdog, loss signals, per-node timeouts), `performance.now()` (its monotonic clock and the
 * stall guard), `Date.now()` (waiting-line tickets), `Math.random()` (retry jitter, tickets)
 * and `crypto.randomFillSync`/`randomBytes` (tokens, locker ids). Rather than thread an
 * injectable scheduler through the engine, the simulation replaces those globals for the
 * duration of a schedule: timers and `Date` by a virtual clock (virtual-clock.ts), `performance.now` by
 * the same virtual clock, and every random source by the schedule's seeded PRNG. The engine
 * runs unchanged, and the simulation cannot forget a place that reads time.
 *
 * Time moves only when every promise has settled: `run` fires the next due timer, lets the
 * microtasks it started run out (one real `setImmediate`), and repeats. Nothing else (no
 * socket, no real timer) runs during a schedule, so the same seed gives the same history.
 *
 * Two pieces of engine state outlive a schedule: the token pool (src/engine/token.ts), which
 * `install` drains so that the schedule's tokens come from its own seed, and the last
 * waiting-line ticket, which only keeps tickets strictly increasing: tickets are compared
 * with each other only, so their order (call order) is the same whatever the earlier
 * schedules left, and no log records their values.
 */
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { performance } from 'node:perf_hooks';
import { newToken } from '../src/engine/token.js';
import type { Random } from './random.js';
import { installClock, VirtualClock } from './virtual-clock.js';

/** The virtual wall clock at the start of every schedule (ms since the epoch). */
export const EPOCH_MS = 1_767_225_600_000; // 2026-01-01T00:00:00Z

export interface VirtualTime {
  /** Virtual ms since the schedule started (what `performance.now()` reads). */
  now(): number;
  /**
   * Fires timers in time order until `done()` is true or virtual time passes `untilMs`.
   * Returns whether `done()` became true.
   */
  run(done: () => boolean, untilMs: number): Promise<boolean>;
  /** Puts the real globals back. */
  uninstall(): void;
}

let installed = false;

/** A timer's delay as Node takes it: below 1 ms (or not a number), 1 ms. */
function atLeastOneMs(ms: number | undefined): number {
  const delay = Number(ms);
  return delay >= 1 ? delay : 1;
}

/** Timers that may fire at one virtual moment before a schedule counts as spinning. */
const SPIN_TIMERS = 100_000;

/** Resolves once every pending promise callback and `process.nextTick` has run. */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Replaces time and randomness with virtual ones drawn from `random`, until `uninstall`. */
export function installVirtualTime(random: Random): VirtualTime {
  if (installed) throw new Error('virtual time is already installed');
  installed = true;
  const clock = new VirtualClock(EPOCH_MS);
  // Node runs a timer of less than 1 ms (0.4, 0) after 1 ms; the virtual clock would run it
  // at the same moment, and a loop retrying after `deadline - now` (0.4 ms) would never see
  // time move.
  const timers = installClock(clock, (ms) => atLeastOneMs(ms as number | undefined));
  const realRandom = Math.random;
  // Nothing reads an error's stack in a schedule; building them was 4% of the run.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  const realFill = crypto.randomFillSync;
  const realBytes = crypto.randomBytes;
  const fill = <T extends NodeJS.ArrayBufferView>(buffer: T): T => {
    const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random.next() * 256);
    return buffer;
  };
  Math.random = () => random.next();
  let refilled = false;
  crypto.randomFillSync = ((buffer: NodeJS.ArrayBufferView) => {
    refilled = true;
    return fill(buffer);
  }) as typeof crypto.randomFillSync;
  crypto.randomBytes = ((size: number) => fill(Buffer.alloc(size))) as typeof crypto.randomBytes;
  syncBuiltinESMExports();
  // Drain what earlier schedules left in the token pool: from the refill on, tokens are seeded.
  while (!refilled) newToken();
  Object.defineProperty(performance, 'now', {
    configurable: true,
    writable: true,
    value: () => clock.now - EPOCH_MS,
  });

  return {
    now: () => clock.now - EPOCH_MS,
    async run(done, untilMs) {
      // A timer of our own at the limit: virtual time never passes it.
      let timedOut = false;
      const limit = setTimeout(
        () => {
          timedOut = true;
        },
        untilMs - (clock.now - EPOCH_MS),
      );
      try {
        await settled();
        let firedAt = clock.now;
        let firedNow = 0;
        while (!done() && !timedOut) {
          // Fired where no other callback is pending (the last wait let every promise
          // settle), then one real turn of the event loop for what it started.
          clock.fireNext();
          await settled();
          firedNow = clock.now === firedAt ? firedNow + 1 : 0;
          firedAt = clock.now;
          if (firedNow > SPIN_TIMERS) {
            throw new Error(
              `virtual time stopped at ${firedAt - EPOCH_MS} ms: ${SPIN_TIMERS} timers fired without it moving (a loop that never waits)`,
            );
          }
        }
        return done();
      } finally {
        clearTimeout(limit);
      }
    },
    uninstall() {
      timers.uninstall();
      Error.stackTraceLimit = stackTraceLimit;
      Math.random = realRandom;
      crypto.randomFillSync = realFill;
      crypto.randomBytes = realBytes;
      syncBuiltinESMExports();
      delete (performance as { now?: unknown }).now;
      installed = false;
    },
  };
}

/** Waits `ms` on the global timers: while a schedule runs, the virtual clock's. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
