/**
 * Scenario 1: acquire + release cycles on distinct keys, no contention: cycles/s and the
 * latency of one cycle, at concurrency 1 and 64, on 1 node and on 5 nodes.
 */
import type { RedisNodes } from '../src/testing/index.js';
import { awaitMessage, forkWorkers } from './child-workers.js';
import { CONTENDERS, type ContenderSpec } from './contenders.js';
import type { ServerWork } from './server-stats.js';
import { median, round } from './stats.js';

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

/**
 * Seconds of cycles before the measured ones, by default. A new instance of a library is
 * slow for its first few thousand cycles while V8 optimizes its code (distlock took about
 * 1.5 s to settle on this machine, the floor about 0.7 s): a 20-cycle warm-up left that in
 * the measured window.
 */
export const WARM_UP_SECONDS = 1;

/** What one run of a cell measured (see `rate-worker.ts`). */
export interface CellRun {
  readonly cyclesPerSec: number;
  readonly cpuUsPerCycle: number;
  readonly server: ServerWork;
  readonly cycles: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** A cell to run: the contender, its nodes, how many cycles at once, for how long. */
export interface CellSetup {
  readonly type: 'setup';
  readonly contender: string;
  readonly urls: readonly string[];
  readonly clientUrls: readonly string[];
  readonly concurrency: number;
  readonly seconds: number;
  readonly warmUpSeconds: number;
  /** A pause after each cycle (one at a time only; see rate-worker.ts). */
  readonly pauseMs?: number;
}

/**
 * Cycles of `spec` on `urls` for `seconds`, `concurrency` at once, after `warmUpSeconds` of
 * the same, in a child process of its own: a lock library runs alone in its users'
 * processes, while in the bench's process it would run beside the code and the garbage of
 * every contender measured before it (see bench/README.md, "Each run alone").
 */
export async function cycles(
  spec: ContenderSpec,
  urls: readonly string[],
  concurrency: number,
  seconds: number,
  warmUpSeconds = WARM_UP_SECONDS,
  clientUrls: readonly string[] = urls,
  pauseMs?: number,
): Promise<CellRun> {
  const [child] = forkWorkers(new URL('./rate-worker.ts', import.meta.url), 1);
  if (!child) throw new Error('could not start a worker');
  const setup: CellSetup = {
    type: 'setup',
    contender: spec.name,
    urls,
    clientUrls,
    concurrency,
    seconds,
    warmUpSeconds,
    ...(pauseMs ? { pauseMs } : {}),
  };
  child.send(setup);
  // Loading tsx and the libraries, then the warm-up and the run, then the report.
  const limitMs = (warmUpSeconds + seconds) * 1_000 + 60_000;
  const report = await awaitMessage<CellReport>(child, 'cell', limitMs);
  if (child.exitCode === null) child.kill();
  if (!report) throw new Error(`${spec.name}: the worker ended without a report`);
  return report.run;
}

/** The worker's report of its run. */
export interface CellReport {
  readonly type: 'cell';
  readonly run: CellRun;
}

function perCycle(run: CellRun, total: number): number {
  return run.cycles === 0 ? 0 : total / run.cycles;
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
    /** A pause after each cycle: one at a time only (the `uncontended-paced` regime). */
    pauseMs?: number;
  },
): Promise<UncontendedRow[]> {
  const rows: UncontendedRow[] = [];
  for (const nodes of [1, 5]) {
    const urls = redis.urls.slice(0, nodes);
    const clientUrls = (options.clientUrls ?? redis.urls).slice(0, nodes);
    for (const concurrency of options.pauseMs ? [1] : [1, 64]) {
      const specs = CONTENDERS.filter(
        (s) =>
          (nodes === 1 ? s.singleNode : s.multiNode) &&
          !s.contentionOnly &&
          (options.only?.(s) ?? true),
      );
      const runs = new Map(specs.map((s) => [s.name, [] as CellRun[]]));
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
                options.pauseMs,
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
          p50Ms: round(median(results.map((r) => r.p50Ms)), 3),
          p99Ms: round(median(results.map((r) => r.p99Ms)), 3),
        });
      }
      process.stderr.write(`  uncontended: ${nodes} node(s), concurrency ${concurrency} done\n`);
    }
  }
  return rows;
}
