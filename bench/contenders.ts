/**
 * The lock implementations under comparison, each behind the same two calls. Every contender
 * gets the same ioredis clients, created the way its users would create them.
 */

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import type { Redis } from 'ioredis';
import { Mutex, RedlockMutex } from 'redis-semaphore';
import NodeRedlock from 'redlock';
// The built package, as users run it (not the TypeScript sources through a loader).
import { Locker, type LockerOptions } from '../dist/esm/index.js';
import type { ContenderSpec } from './contender-spec.js';
import { handOffFloor } from './handoff-floor.js';
import { distlockWithTelemetry } from './telemetry-contender.js';

export type { Contender, ContenderSpec, Held, Tuning } from './contender-spec.js';

let tokenCounter = 0;
const RELEASE_LUA =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/**
 * The floor: the least work the algorithm can do, SET NX PX then EVALSHA compare-and-delete,
 * sent to every node in parallel, with no quorum logic, timeouts or retries.
 */
const floor: ContenderSpec = {
  name: 'ioredis floor',
  multiNode: true,
  singleNode: true,
  make(clients) {
    for (const c of clients) c.defineCommand('benchRelease', { numberOfKeys: 1, lua: RELEASE_LUA });
    return {
      async acquire(key, ttlMs) {
        const token = `${process.pid}:${++tokenCounter}`;
        for (;;) {
          const replies = await Promise.all(
            clients.map((c) => c.set(key, token, 'PX', ttlMs, 'NX')),
          );
          if (replies.every((r) => r === 'OK')) break;
          await Promise.all(clients.map((c) => (c as never as Release).benchRelease(key, token)));
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        return {
          release: () =>
            Promise.all(clients.map((c) => (c as never as Release).benchRelease(key, token))),
        };
      },
      close: async () => {},
    };
  },
};

interface Release {
  benchRelease(key: string, token: string): Promise<number>;
}

function distlockSpec(
  name: string,
  fair: boolean,
  Impl: typeof Locker = Locker,
  options: Partial<LockerOptions> = {},
): ContenderSpec {
  return {
    name,
    multiNode: true,
    singleNode: true,
    contentionOnly: fair,
    uncontendedOnly: options.owner === false,
    make(clients, tuning) {
      const locker = new Impl({
        nodes: clients,
        ...(tuning === 'tuned' ? { retryDelayMs: 2 } : {}),
        ...options,
      });
      return {
        acquire: (key, ttlMs) => locker.acquire(key, { ttlMs, waitMs: 10_000, fair }),
        close: () => locker.close(),
      };
    },
  };
}

const distlock = distlockSpec('distlock', false);
const distlockFair = distlockSpec('distlock fair', true);
/** What the owner label (on by default: host and pid) costs per cycle. */
const distlockNoOwner = distlockSpec('distlock owner: false', false, Locker, { owner: false });

/**
 * Another build of distlock to measure against in the same run: `DISTLOCK_BASELINE` names a
 * checkout whose `dist/` is built (`npm run build` there). Read from the environment so that
 * the contention workers, forked per run, load the same contenders.
 */
const BASELINE = process.env.DISTLOCK_BASELINE;
const baseline: ContenderSpec[] = [];
if (BASELINE) {
  const url = pathToFileURL(resolve(BASELINE, 'dist/esm/index.js')).href;
  const { Locker: BaselineLocker } = (await import(url)) as { Locker: typeof Locker };
  baseline.push(
    distlockSpec('distlock baseline', false, BaselineLocker),
    distlockSpec('distlock baseline fair', true, BaselineLocker),
  );
}

function redlockLike(name: string, Impl: typeof NodeRedlock | typeof SesameRedlock): ContenderSpec {
  return {
    name,
    multiNode: true,
    singleNode: true,
    make(clients, tuning) {
      const settings = tuning === 'tuned' ? { retryCount: -1, retryDelay: 2, retryJitter: 2 } : {};
      const redlock = new Impl(clients as never, settings);
      // Errors on idle clients are reported per operation; without a listener they would throw.
      redlock.on('error', () => {});
      return {
        acquire: async (key, ttlMs) => redlock.acquire([key], ttlMs),
        close: async () => {},
      };
    },
  };
}

function semaphore(name: string, kind: 'Mutex' | 'RedlockMutex'): ContenderSpec {
  return {
    name,
    multiNode: kind === 'RedlockMutex',
    singleNode: true,
    make(clients, tuning) {
      const options = tuning === 'tuned' ? { retryInterval: 1 } : {};
      return {
        async acquire(key, ttlMs) {
          const mutex =
            kind === 'Mutex'
              ? new Mutex(clients[0] as Redis, key, { lockTimeout: ttlMs, ...options })
              : new RedlockMutex(clients, key, { lockTimeout: ttlMs, ...options });
          await mutex.acquire();
          return { release: () => mutex.release() };
        },
        close: async () => {},
      };
    },
  };
}

/** Every contender, floors first. */
export const CONTENDERS: readonly ContenderSpec[] = [
  floor,
  handOffFloor,
  distlock,
  distlockFair,
  distlockNoOwner,
  ...baseline,
  redlockLike('redlock 5.0.0-beta.2', NodeRedlock),
  redlockLike('@sesamecare-oss/redlock', SesameRedlock),
  semaphore('redis-semaphore Mutex', 'Mutex'),
  semaphore('redis-semaphore RedlockMutex', 'RedlockMutex'),
  distlockWithTelemetry,
];

/** Finds a contender by (case-insensitive) name prefix. */
export function contender(name: string): ContenderSpec {
  const found = CONTENDERS.find((c) => c.name.toLowerCase().startsWith(name.toLowerCase()));
  if (!found) throw new Error(`no contender named ${name}`);
  return found;
}
