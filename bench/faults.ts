/**
 * Scenario 3: five nodes, one of them failing. (a) node 0 paused with SIGSTOP: connections stay
 * open, nothing answers. (b) node 1 killed with SIGKILL: connections refused, ioredis queues
 * commands while it reconnects. Every multi-node contender runs acquire + release cycles on
 * distinct keys at concurrency 4; one cycle that takes over 5 s counts as stuck and the worker
 * moves on. Meanwhile the faulted node's client queue and the heap are sampled every 100 ms.
 */
import type { RedisNodes } from '../src/testing/index.js';
import { closeClients, openClients, pendingCommands } from './clients.js';
import { CONTENDERS, type ContenderSpec } from './contenders.js';
import { median, nowMs, percentile, round } from './stats.js';

export type Fault = 'node 0 paused (SIGSTOP)' | 'node 1 killed (SIGKILL)';

export interface FaultFigures {
  readonly cycles: number;
  readonly cyclesPerSec: number;
  readonly failures: number;
  readonly stuck: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Seconds from the fault to the last cycle that completed; 0 if none did. */
  readonly lastSuccessS: number;
  readonly maxPendingOnFaultedNode: number;
  readonly heapGrowthBytes: number;
}

export interface FaultRow extends FaultFigures {
  readonly fault: Fault;
  readonly contender: string;
}

const TTL_MS = 10_000;
const CONCURRENCY = 4;
const CAP_MS = 5_000;
const SAMPLE_EVERY_MS = 100;

type Outcome = 'ok' | 'failed' | 'stuck';

/** Settles with how `op` ended, or 'stuck' after CAP_MS (`op` is left to finish on its own). */
function capped(op: Promise<unknown>): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve('stuck'), CAP_MS);
  });
  const outcome = op.then<Outcome, Outcome>(
    () => 'ok',
    () => 'failed',
  );
  return Promise.race([outcome, cap]).finally(() => clearTimeout(timer));
}

async function runOnce(redis: RedisNodes, spec: ContenderSpec, fault: Fault, seconds: number) {
  const faulted = fault.startsWith('node 0') ? 0 : 1;
  const node = redis.nodes[faulted];
  if (!node) throw new Error('faults need 5 nodes');
  const clients = await openClients(redis.urls);
  const faultedClient = clients[faulted];
  if (!faultedClient) throw new Error('no client for the faulted node');
  const lib = spec.make(clients, 'defaults');
  const tag = `${spec.name.replace(/\W+/g, '')}:${Math.random().toString(36).slice(2, 8)}`;
  for (let i = 0; i < 5; i++)
    await (await lib.acquire(`bench:f:${tag}:warm:${i}`, TTL_MS)).release();
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  let maxPending = 0;
  let maxHeap = heapBefore;
  const sampler = setInterval(() => {
    maxPending = Math.max(maxPending, pendingCommands(faultedClient));
    maxHeap = Math.max(maxHeap, process.memoryUsage().heapUsed);
  }, SAMPLE_EVERY_MS);

  if (faulted === 0) node.pause();
  else await node.kill();
  const started = nowMs();
  const end = started + seconds * 1_000;
  const latencies: number[] = [];
  let failures = 0;
  let stuck = 0;
  let lastSuccess = started;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let i = 0; nowMs() < end; i++) {
        const t0 = nowMs();
        const key = `bench:f:${tag}:${worker}:${i}`;
        const outcome = await capped(lib.acquire(key, TTL_MS).then((held) => held.release()));
        if (outcome === 'ok') {
          lastSuccess = nowMs();
          latencies.push(lastSuccess - t0);
        } else if (outcome === 'failed') failures++;
        else stuck++;
      }
    }),
  );
  clearInterval(sampler);
  const elapsedS = (nowMs() - started) / 1_000;

  if (faulted === 0) node.resume();
  else await node.restart();
  await capped(lib.close());
  closeClients(clients);
  return {
    cycles: latencies.length,
    cyclesPerSec: latencies.length / elapsedS,
    failures,
    stuck,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: percentile(latencies, 100),
    lastSuccessS: latencies.length ? (lastSuccess - started) / 1_000 : 0,
    maxPendingOnFaultedNode: maxPending,
    heapGrowthBytes: maxHeap - heapBefore,
  } satisfies FaultFigures;
}

/** Each fault, each multi-node contender, fresh clients each time; medians over repetitions. */
export async function faults(
  redis: RedisNodes,
  options: { seconds: number; reps: number; only?: (spec: ContenderSpec) => boolean },
): Promise<FaultRow[]> {
  const rows: FaultRow[] = [];
  const specs = CONTENDERS.filter(
    (s) => s.multiNode && !s.contentionOnly && !s.uncontendedOnly && (options.only?.(s) ?? true),
  );
  for (const fault of ['node 0 paused (SIGSTOP)', 'node 1 killed (SIGKILL)'] as const) {
    const runs = specs.map(() => [] as FaultFigures[]);
    for (let rep = 0; rep < options.reps; rep++) {
      for (const [i, spec] of specs.entries()) {
        runs[i]?.push(await runOnce(redis, spec, fault, options.seconds));
      }
    }
    for (const [i, spec] of specs.entries()) {
      const results = runs[i] ?? [];
      const pick = (k: keyof FaultFigures, digits: number) =>
        round(median(results.map((r) => r[k])), digits);
      rows.push({
        fault,
        contender: spec.name,
        cycles: pick('cycles', 0),
        cyclesPerSec: pick('cyclesPerSec', 0),
        failures: pick('failures', 0),
        stuck: pick('stuck', 0),
        p50Ms: pick('p50Ms', 3),
        p99Ms: pick('p99Ms', 3),
        maxMs: pick('maxMs', 1),
        lastSuccessS: pick('lastSuccessS', 2),
        maxPendingOnFaultedNode: pick('maxPendingOnFaultedNode', 0),
        heapGrowthBytes: pick('heapGrowthBytes', 0),
      });
    }
    process.stderr.write(`  faults: ${fault} done\n`);
  }
  return rows;
}
