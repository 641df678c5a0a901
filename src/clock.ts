import { performance } from 'node:perf_hooks';

/** A monotonic millisecond clock. Never `Date.now()`: wall time can jump. */
export interface Clock {
  now(): number;
}

/** The process's monotonic clock (`performance.now()`). */
export const monotonicClock: Clock = { now: () => performance.now() };
