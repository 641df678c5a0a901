/**
 * Scenario 1: acquire + release cycles on distinct keys, no contention: cycles/s and the
 * latency of one cycle, at concurrency 1 and 64, on 1 node and on 5 nodes.
 */
import type { RedisNodes } from '../src/testing/index.js';
import { closeClients, openClients } from './clients.js';
import { CONTENDERS, type ContenderSpec } from './contenders.js';
import { ServerStats, type ServerWork, workBetween } from './server-stats.js';
import { median, nowMs, percentile, round } from './stats.js';

export interface UncontendedRow {
  readonly contender: string;
  readonly nodes: number;
  readonly concurrency: number;
  readonly cyclesPerSec: number;
  /**
   * CPU this process spent per cycle (µs, user + system): the client's cost of a cycle, the
   * Redis servers' excluded.
   */
  readonly cpuUsPerCycle: number;
  /**
   * The Redis servers' work per cycle, summed over the nodes: the commands' time from
   * `INFO commandstats` (µs), the commands run, and the main thread's CPU (µs).
   */
  readonly serverUsPerCycle: number;
  readonly serverCallsPerCycle: number;
  readonly serverCpuUsPerCycle: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const TTL_MS = 10_000;
/**
 * Seconds of cycles before the measured ones, by default. A new instance of a library is
 * slow for its first few thousand cycles while V8 optimizes its code (distlock took about
 * 1.5 s to settle on this machine, the floor about 0.7 s): a 20-cycle warm-up left that in
 * the measured window.
 */
export const WARM_UP_SECONDS = 1;

/**
 * Cycles of `spec` on `urls` for `seconds`, `concurrency` at once, after `warmUpSeconds` of
 * the same: cycles/s and latencies.
 */
export async function cycles(
  spec: ContenderSpec,
  urls: readonly string[],
  concurrency: number,
  seconds: number,
  warmUpSeconds = WARM_UP_SECONDS,
  clientUrls: readonly string[] = urls,
): Promise<{
  cyclesPerSec: number;
  cpuUsPerCycle: number;
  server: ServerWork;
  latencies: number[];
}> {
  const clients = await openClients(clientUrls);
  const serverStats = await ServerStats.open(urls);
  const lib = spec.make(clients, 'defaults');
  const latencies: number[] = [];
  const tag = `${spec.name.replace(/\W+/g, '')}:${Math.random().toString(36).slice(2, 8)}`;
  // Warm-up: load scripts, settle connections, let V8 optimize.
  for (let i = 0; i < 20; i++)
    await (await lib.acquire(`bench:warm:${tag}:${i}`, TTL_MS)).release();
  let failures = 0;
  const run = (until: number, keys: string, record: number[]) =>
    Promise.all(
      Array.from({ length: concurrency }, async (_, worker) => {
        const key = `${keys}:${worker}`;
        while (nowMs() < until) {
          const t0 = nowMs();
          try {
            const held = await lib.acquire(key, TTL_MS);
            await held.release();
            record.push(nowMs() - t0);
          } catch {
            failures++; // a library that gave up (its own acquire timeout): no cycle
          }
        }
      }),
    );
  await run(nowMs() + warmUpSeconds * 1_000, `bench:warm:${tag}`, []);
  const serverAtStart = await serverStats.read();
  const started = nowMs();
  const cpuAtStart = process.cpuUsage();
  await run(started + seconds * 1_000, `bench:u:${tag}`, latencies);
  const elapsed = (nowMs() - started) / 1_000;
  const cpu = process.cpuUsage(cpuAtStart);
  const server = workBetween(serverAtStart, await serverStats.read());
  serverStats.close();
  await lib.close();
  closeClients(clients);
  const cpuUsPerCycle = (cpu.user + cpu.system) / latencies.length;
  if (failures > 0) {
    process.stderr.write(`  ${spec.name}: ${failures} acquire+release cycle(s) failed\n`);
  }
  return { cyclesPerSec: latencies.length / elapsed, cpuUsPerCycle, server, latencies };
}

function perCycle(run: { latencies: readonly number[] }, total: number): number {
  return run.latencies.length === 0 ? 0 : total / run.latencies.length;
}

/** Runs every cell; contenders alternate within each repetition so drift hits all alike. */
export async function uncontended(
  redis: RedisNodes,
  options: {
    seconds: number;
    reps: number;
    warmUpSeconds: number;
    only?: (spec: ContenderSpec) => boolean;
    /** The clients' urls for the nodes, when they reach them another way (a slow network). */
    clientUrls?: readonly string[];
  },
): Promise<UncontendedRow[]> {
  const rows: UncontendedRow[] = [];
  for (const nodes of [1, 5]) {
    const urls = redis.urls.slice(0, nodes);
    const clientUrls = (options.clientUrls ?? redis.urls).slice(0, nodes);
    for (const concurrency of [1, 64]) {
      const specs = CONTENDERS.filter(
        (s) =>
          (nodes === 1 ? s.singleNode : s.multiNode) &&
          !s.contentionOnly &&
          (options.only?.(s) ?? true),
      );
      const runs = new Map(specs.map((s) => [s.name, [] as Awaited<ReturnType<typeof cycles>>[]]));
      for (let rep = 0; rep < options.reps; rep++) {
        for (const spec of specs) {
          runs
            .get(spec.name)
            ?.push(
              await cycles(
                spec,
                urls,
                concurrency,
                options.seconds,
                options.warmUpSeconds,
                clientUrls,
              ),
            );
        }
      }
      for (const spec of specs) {
        const results = runs.get(spec.name) ?? [];
        rows.push({
          contender: spec.name,
          nodes,
          concurrency,
          cyclesPerSec: round(median(results.map((r) => r.cyclesPerSec)), 0),
          cpuUsPerCycle: round(median(results.map((r) => r.cpuUsPerCycle)), 1),
          serverUsPerCycle: round(median(results.map((r) => perCycle(r, r.server.usec))), 1),
          serverCallsPerCycle: round(median(results.map((r) => perCycle(r, r.server.calls))), 2),
          serverCpuUsPerCycle: round(median(results.map((r) => perCycle(r, r.server.cpuUs))), 1),
          p50Ms: round(median(results.map((r) => percentile(r.latencies, 50))), 3),
          p99Ms: round(median(results.map((r) => percentile(r.latencies, 99))), 3),
        });
      }
      process.stderr.write(`  uncontended: ${nodes} node(s), concurrency ${concurrency} done\n`);
    }
  }
  return rows;
}
