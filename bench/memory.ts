/**
 * Scenario 4: what a held lock costs. Each contender holds 10,000 locks on distinct keys (60 s
 * TTL) on one node; Redis `used_memory` and this process's `heapUsed`, both after a forced GC,
 * are compared with the same figures before, and divided by the number of locks held.
 */
import { Redis } from 'ioredis';
import type { RedisNodes } from '../src/testing/index.js';
import { closeClients, openClients } from './clients.js';
import { CONTENDERS, type ContenderSpec, type Held } from './contenders.js';
import { median, round } from './stats.js';

export interface MemoryRow {
  readonly contender: string;
  readonly locks: number;
  readonly redisBytesPerLock: number;
  readonly heapBytesPerLock: number;
}

const LOCKS = 10_000;
const BATCH = 100;
const TTL_MS = 60_000;

async function redisUsedMemory(admin: Redis): Promise<number> {
  const info = await admin.info('memory');
  const match = /^used_memory:(\d+)/m.exec(info);
  if (!match?.[1]) throw new Error('INFO memory has no used_memory');
  return Number(match[1]);
}

/** `heapUsed` after two forced GCs (the bench runs with `--expose-gc`). */
export function settledHeap(): number {
  if (!globalThis.gc) throw new Error('measuring the heap needs node --expose-gc');
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
}

async function runOnce(spec: ContenderSpec, url: string, admin: Redis) {
  const clients = await openClients([url]);
  const lib = spec.make(clients, 'defaults');
  const tag = `${spec.name.replace(/\W+/g, '')}:${Math.random().toString(36).slice(2, 8)}`;
  for (let i = 0; i < 10; i++)
    await (await lib.acquire(`bench:m:${tag}:warm:${i}`, TTL_MS)).release();
  // Leftovers of earlier scenarios would expire during the measurement and skew it.
  await admin.flushall();
  const redisBefore = await redisUsedMemory(admin);
  const heapBefore = settledHeap();

  const held: Held[] = [];
  for (let start = 0; start < LOCKS; start += BATCH) {
    const batch = Array.from({ length: BATCH }, (_, i) =>
      lib.acquire(`bench:m:${tag}:${start + i}`, TTL_MS),
    );
    held.push(...(await Promise.all(batch)));
  }
  const heapAfter = settledHeap();
  const redisAfter = await redisUsedMemory(admin);

  for (let start = 0; start < held.length; start += BATCH) {
    await Promise.all(held.slice(start, start + BATCH).map((h) => h.release()));
  }
  await lib.close();
  closeClients(clients);
  return {
    redisBytesPerLock: (redisAfter - redisBefore) / held.length,
    heapBytesPerLock: (heapAfter - heapBefore) / held.length,
  };
}

/** Every single-node contender on node 0; medians over repetitions. */
export async function memory(
  redis: RedisNodes,
  options: { reps: number; only?: (spec: ContenderSpec) => boolean },
): Promise<MemoryRow[]> {
  const url = redis.urls[0] as string;
  const admin = new Redis(url);
  try {
    const specs = CONTENDERS.filter(
      (s) => s.singleNode && !s.contentionOnly && !s.uncontendedOnly && (options.only?.(s) ?? true),
    );
    const runs = specs.map(() => [] as { redisBytesPerLock: number; heapBytesPerLock: number }[]);
    for (let rep = 0; rep < options.reps; rep++) {
      for (const [i, spec] of specs.entries()) runs[i]?.push(await runOnce(spec, url, admin));
    }
    process.stderr.write('  memory: done\n');
    return specs.map((spec, i) => ({
      contender: spec.name,
      locks: LOCKS,
      redisBytesPerLock: round(median((runs[i] ?? []).map((r) => r.redisBytesPerLock)), 0),
      heapBytesPerLock: round(median((runs[i] ?? []).map((r) => r.heapBytesPerLock)), 0),
    }));
  } finally {
    admin.disconnect();
  }
}
