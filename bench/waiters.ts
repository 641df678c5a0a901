/**
 * Scenario 5: what waiting costs. One client holds a key; 10, 100 or 1,000 acquirers of one
 * locker wait for it for a few seconds. Measures, per waiter per second and summed over the
 * nodes, the requests the waiters send (EVALSHA/EVAL calls: a waiter in line sends nothing
 * else) and the commands Redis runs for them (`total_commands_processed`, which counts the
 * commands inside scripts too, minus this scenario's own reads); both must stay bounded as
 * waiters are added. Also the heap each waiting acquirer takes (after a forced GC).
 * distlock only: the peers poll.
 */
import { setMaxListeners } from 'node:events';
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
  readonly requestsPerWaiterPerSec: number;
  readonly commandsPerWaiterPerSec: number;
  readonly heapBytesPerWaiter: number;
}

const WAITER_COUNTS = [10, 100, 1_000];
const NODE_COUNTS = [1, 3];
const TTL_MS = 60_000;

/** Commands processed and script calls so far, summed over the nodes (two INFO reads each). */
async function served(admins: readonly Redis[]): Promise<{ commands: number; scripts: number }> {
  const counts = await Promise.all(
    admins.map(async (admin) => {
      const stats = String(await admin.info('stats'));
      const commandStats = String(await admin.info('commandstats'));
      const match = /^total_commands_processed:(\d+)/m.exec(stats);
      if (!match?.[1]) throw new Error('INFO stats has no total_commands_processed');
      const calls = (name: string) =>
        Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(commandStats)?.[1] ?? 0);
      return { commands: Number(match[1]), scripts: calls('evalsha') + calls('eval') };
    }),
  );
  return counts.reduce((a, b) => ({
    commands: a.commands + b.commands,
    scripts: a.scripts + b.scripts,
  }));
}

async function runOnce(urls: readonly string[], waiters: number, fair: boolean, seconds: number) {
  const clients = await openClients(urls);
  const admins = urls.map((url) => new Redis(url));
  const locker = new Locker({ nodes: clients });
  const resource = `bench:w:${Math.random().toString(36).slice(2, 8)}`;
  const holder = await locker.acquire(resource, { ttlMs: TTL_MS });
  const heapBefore = settledHeap();
  const stop = new AbortController();
  setMaxListeners(Number.POSITIVE_INFINITY, stop.signal); // one signal for every waiter
  const waiting = Array.from({ length: waiters }, () =>
    locker
      .acquire(resource, { ttlMs: TTL_MS, waitMs: TTL_MS, fair, signal: stop.signal })
      .then((lock) => lock.release())
      .catch(() => undefined),
  );
  // Let every waiter make its first attempts and subscribe before counting.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const heapWaiting = settledHeap();
  const before = await served(admins);
  const startedAt = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1_000));
  const after = await served(admins);
  // The INFO reads themselves are two commands per node.
  const commands = after.commands - before.commands - 2 * admins.length;
  const elapsedS = (performance.now() - startedAt) / 1_000;
  stop.abort();
  await Promise.all(waiting);
  await holder.release();
  await locker.close();
  for (const admin of admins) admin.disconnect();
  closeClients(clients);
  return {
    requestsPerWaiterPerSec: (after.scripts - before.scripts) / waiters / elapsedS,
    commandsPerWaiterPerSec: commands / waiters / elapsedS,
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
          requestsPerWaiterPerSec: round(median(runs.map((r) => r.requestsPerWaiterPerSec)), 2),
          commandsPerWaiterPerSec: round(median(runs.map((r) => r.commandsPerWaiterPerSec)), 2),
          heapBytesPerWaiter: round(median(runs.map((r) => r.heapBytesPerWaiter)), 0),
        });
        process.stderr.write(`  waiters: ${nodes} node(s), ${count} ${fair ? 'fair' : 'plain'}\n`);
      }
    }
  }
  return rows;
}
