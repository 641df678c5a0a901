/**
 * Scenario 5: what waiting costs. One client holds a key; 10, 100 or 1,000 acquirers of one
 * locker wait for it for a few seconds. Measures the Redis commands the waiters send per
 * waiter per second (`total_commands_processed`, summed over the nodes, minus the holder's
 * and this scenario's own reads), which must stay bounded as waiters are added, and the
 * heap each waiting acquirer takes (after a forced GC). distlock only: the peers poll.
 */
import { Redis } from 'ioredis';
import { Locker } from '../src/index.js';
import type { RedisNodes } from '../src/testing/index.js';
import { closeClients, openClients } from './clients.js';
import { settledHeap } from './memory.js';
import { median, round } from './stats.js';

export interface WaitersRow {
  readonly nodes: number;
  readonly waiters: number;
  readonly fair: boolean;
  readonly commandsPerWaiterPerSec: number;
  readonly heapBytesPerWaiter: number;
}

const WAITER_COUNTS = [10, 100, 1_000];
const NODE_COUNTS = [1, 3];
const TTL_MS = 60_000;

async function commandsProcessed(admins: readonly Redis[]): Promise<number> {
  const counts = await Promise.all(
    admins.map(async (admin) => {
      const match = /^total_commands_processed:(\d+)/m.exec(await admin.info('stats'));
      if (!match?.[1]) throw new Error('INFO stats has no total_commands_processed');
      return Number(match[1]);
    }),
  );
  return counts.reduce((sum, n) => sum + n, 0);
}

async function runOnce(urls: readonly string[], waiters: number, fair: boolean, seconds: number) {
  const clients = await openClients(urls);
  const admins = urls.map((url) => new Redis(url));
  const locker = new Locker({ nodes: clients });
  const resource = `bench:w:${Math.random().toString(36).slice(2, 8)}`;
  const holder = await locker.acquire(resource, { ttlMs: TTL_MS });
  const heapBefore = settledHeap();
  const stop = new AbortController();
  const waiting = Array.from({ length: waiters }, () =>
    locker
      .acquire(resource, { ttlMs: TTL_MS, waitMs: TTL_MS, fair, signal: stop.signal })
      .then((lock) => lock.release())
      .catch(() => undefined),
  );
  // Let every waiter make its first attempts and subscribe before counting.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const heapWaiting = settledHeap();
  const before = await commandsProcessed(admins);
  const startedAt = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1_000));
  // The INFO reads themselves are one command per node each.
  const sent = (await commandsProcessed(admins)) - before - admins.length;
  const elapsedS = (performance.now() - startedAt) / 1_000;
  stop.abort();
  await Promise.all(waiting);
  await holder.release();
  await locker.close();
  for (const admin of admins) admin.disconnect();
  closeClients(clients);
  return {
    commandsPerWaiterPerSec: sent / waiters / elapsedS,
    heapBytesPerWaiter: (heapWaiting - heapBefore) / waiters,
  };
}

/** Every cell: node counts × waiter counts, plain and fair. */
export async function waiters(
  redis: RedisNodes,
  options: { seconds: number; reps: number },
): Promise<WaitersRow[]> {
  const rows: WaitersRow[] = [];
  for (const nodes of NODE_COUNTS) {
    for (const fair of [false, true]) {
      for (const count of WAITER_COUNTS) {
        const runs = [];
        for (let rep = 0; rep < options.reps; rep++) {
          runs.push(await runOnce(redis.urls.slice(0, nodes), count, fair, options.seconds));
        }
        rows.push({
          nodes,
          waiters: count,
          fair,
          commandsPerWaiterPerSec: round(median(runs.map((r) => r.commandsPerWaiterPerSec)), 2),
          heapBytesPerWaiter: round(median(runs.map((r) => r.heapBytesPerWaiter)), 0),
        });
        process.stderr.write(`  waiters: ${nodes} node(s), ${count} ${fair ? 'fair' : 'plain'}\n`);
      }
    }
  }
  return rows;
}
