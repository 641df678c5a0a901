/** A monotonic millisecond clock. Never `Date.now()`: wall time can jump. */
export interface Clock {
  now(): number;
}

/**
 * The process's monotonic clock: the global `performance.now()`, read at each call, so that
 * fake timers that replace it (vitest's, `@sinonjs/fake-timers`) drive a locker's deadlines.
 */
export const monotonicClock: Clock = { now: () => performance.now() };
