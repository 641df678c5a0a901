/**
 * A workload worker for the fault suite and the demo (a child process, so the nemesis can SIGSTOP it): loops acquire, a
 * read-modify-write of a counter in a separate store, release; appends each holding and each
 * write to its history file as JSON lines. Fenced mode uses fencedReadForUpdate/fencedWrite; unfenced
 * mode plain GET/SET (the negative control).
 */
import { appendFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { fencedReadForUpdate, fencedWrite, type Lock, Locker } from '../src/index.js';
import type { HistoryEvent } from '../src/testing/index.js';

export interface WorkerConfig {
  readonly id: string;
  readonly lockUrls: readonly string[];
  readonly storeUrl: string;
  readonly resource: string;
  readonly ttlMs: number;
  /** How long a holding lasts between the read and the write. */
  readonly holdMs: number;
  readonly seconds: number;
  readonly fencing: boolean;
  readonly out: string;
  /**
   * Hold a permit of a semaphore with this many permits instead of the lock; a permit holder
   * writes nothing (several hold one at once).
   */
  readonly permits?: number;
  /**
   * Take a read-write lock instead: a third of the holdings write (the counter), the others
   * only read it.
   */
  readonly readWrite?: boolean;
  /** The lockers' `restartGraceMs` (0: restarted nodes vote at once, the negative control). */
  readonly restartGraceMs?: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const record = (event: HistoryEvent) => appendFileSync(config.out, `${JSON.stringify(event)}\n`);
const store = new Redis(config.storeUrl, { maxRetriesPerRequest: 1 });
store.on('error', () => {});
const { restartGraceMs } = config;
const locker = new Locker({
  nodes: config.lockUrls,
  retryDelayMs: 20,
  ...(restartGraceMs === undefined ? {} : { restartGraceMs }),
});
// Restarts and re-pointed nodes are the nemesis's doing: no process warning for each.
locker.events.on('warning', () => {});
// Once its first attempt is over, the locker knows which server each node that answered is:
// a node restarted after that is one it sees restart.
let started = false;
const onAttempt = () => {
  if (!started) process.send?.('started');
  started = true;
};
locker.events.on('acquired', onAttempt);
locker.events.on('retry', onAttempt);
const { id: worker, resource, fencing } = config;
const end = now() + config.seconds * 1_000;

const { permits } = config;
const semaphore = permits === undefined ? undefined : locker.semaphore(resource, { permits });
const readWrite = config.readWrite ? locker.readWriteLock(resource) : undefined;

/** Acquires what this holding takes: a permit, a read or write lock, or the lock. */
function acquire(mode: 'read' | 'write' | undefined): Promise<Lock> {
  const options = { ttlMs: config.ttlMs, waitMs: 1_000 };
  if (semaphore) return semaphore.acquire(options);
  if (readWrite && mode) return readWrite[mode].acquire(options);
  return locker.acquire(resource, { ...options, fencing });
}

while (now() < end) {
  const mode = readWrite ? (Math.random() < 1 / 3 ? 'write' : 'read') : undefined;
  const lock = await acquire(mode).catch(() => undefined);
  if (!lock) continue;
  const acquiredAt = now();
  process.send?.('holding'); // lets the nemesis pause a worker while it holds the lock
  const fence = lock.fence?.toString();
  try {
    if (semaphore || mode === 'read') {
      await delay(config.holdMs);
    } else if (lock.fence !== undefined) {
      const read = await fencedReadForUpdate(store, resource, lock.fence);
      if (read !== 'stale') {
        const value = Number(read.value ?? 0) + 1;
        await delay(config.holdMs);
        const outcome = await fencedWrite(store, resource, lock.fence, String(value));
        record({ type: 'write', worker, resource, fence, value, at: now(), outcome });
      }
    } else {
      const value = Number((await store.hget(resource, 'value')) ?? 0) + 1;
      await delay(config.holdMs);
      await store.hset(resource, 'value', String(value));
      record({ type: 'write', worker, resource, value, at: now(), outcome: 'applied' });
    }
  } catch {
    // the store failed: no write to record
  }
  record({
    type: 'holding',
    worker,
    resource,
    acquiredAt,
    releasedAt: now(),
    ...(fence ? { fence } : {}),
    ...(semaphore ? { mode: 'permit', permits } : {}),
    ...(mode ? { mode } : {}),
  });
  await lock.release();
}
await locker.close();
store.disconnect();
process.disconnect?.();
