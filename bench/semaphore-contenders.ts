/**
 * The counting semaphores under comparison, each behind the same two calls: distlock's
 * `locker.semaphore` (plain and fair) and redis-semaphore's `Semaphore` (one node) and
 * `RedlockSemaphore` (several). Each runs with the retry settings its README gives as
 * default; only the lease and the longest wait are set, to the same values for all.
 */
import type { Redis } from 'ioredis';
import { Semaphore, RedlockSemaphore as SemaphoreOnNodes } from 'redis-semaphore';
// The built package, as users run it (not the TypeScript sources through a loader).
import { Locker } from '../dist/esm/index.js';
import type { Held } from './contenders.js';

/** What every contender is given: the same for all. */
export interface SemaphoreSettings {
  readonly permits: number;
  /** Lease: distlock's `ttlMs`, redis-semaphore's `lockTimeout`. */
  readonly ttlMs: number;
  /** Longest wait: distlock's `waitMs`, redis-semaphore's `acquireTimeout`. */
  readonly waitMs: number;
}

/** One library's semaphore, set up on one worker's own clients. */
export interface SemaphoreContender {
  /** A permit of the semaphore `key`; `signal` ends the wait (the bench's drain deadline). */
  acquire(key: string, signal: AbortSignal): Promise<Held>;
  close(): Promise<void>;
}

export interface SemaphoreSpec {
  readonly name: string;
  /** Whether it runs on one node, and on several (Redlock-style). */
  readonly singleNode: boolean;
  readonly multiNode: boolean;
  make(clients: Redis[], settings: SemaphoreSettings): SemaphoreContender;
}

function distlockSpec(name: string, fair: boolean): SemaphoreSpec {
  return {
    name,
    singleNode: true,
    multiNode: true,
    make(clients, { permits, ttlMs, waitMs }) {
      // Default retryDelayMs (100 ms): a release hands the permit to the first waiter in line.
      const locker = new Locker({ nodes: clients });
      const pools = new Map<string, ReturnType<Locker['semaphore']>>();
      return {
        acquire(key, signal) {
          const pool = pools.get(key) ?? locker.semaphore(key, { permits });
          pools.set(key, pool);
          return pool.acquire({ ttlMs, waitMs, fair, signal });
        },
        close: () => locker.close(),
      };
    },
  };
}

function redisSemaphoreSpec(name: string, kind: 'Semaphore' | 'RedlockSemaphore'): SemaphoreSpec {
  return {
    name,
    singleNode: kind === 'Semaphore',
    multiNode: kind === 'RedlockSemaphore',
    make(clients, { permits, ttlMs, waitMs }) {
      // Default retryInterval (10 ms) and refreshInterval (0.8 × lockTimeout, never reached
      // by a 2 ms hold); a new instance per acquisition, as its README does.
      const options = { lockTimeout: ttlMs, acquireTimeout: waitMs };
      return {
        async acquire(key, signal) {
          const semaphore =
            kind === 'Semaphore'
              ? new Semaphore(clients[0] as Redis, key, permits, options)
              : new SemaphoreOnNodes(clients, key, permits, options);
          await semaphore.acquire(signal);
          return { release: () => semaphore.release() };
        },
        close: async () => {},
      };
    },
  };
}

/** redis-semaphore's rows: the baseline that distlock's rows are divided by. */
export const SEMAPHORE_BASELINES = new Set([
  'redis-semaphore Semaphore',
  'redis-semaphore RedlockSemaphore',
]);

/** Every contender, distlock first. */
export const SEMAPHORE_CONTENDERS: readonly SemaphoreSpec[] = [
  distlockSpec('distlock', false),
  distlockSpec('distlock fair', true),
  redisSemaphoreSpec('redis-semaphore Semaphore', 'Semaphore'),
  redisSemaphoreSpec('redis-semaphore RedlockSemaphore', 'RedlockSemaphore'),
];
