/**
 * Scenario 2: ten workers, in five child processes, fight for ONE key on one node. Each loops
 * acquire (10 s TTL), hold ~1 ms, release. Measures throughput, how long a worker waits, the
 * hand-off gap (lock free but nobody holding it), whether the releaser wins again, fairness,
 * and acquire failures. Each library runs with its default retry settings and tuned ones; the
 * floor spins every 1 ms whatever the tuning, so it runs once, as a reference row.
 */
import type { RedisNodes } from '../src/testing/index.js';
import { awaitMessage, forkWorkers, workerIdsOf } from './child-workers.js';
import { CONTENDERS, type ContenderSpec, type Tuning } from './contenders.js';
import type { Acquisition, WorkerReport, WorkerSetup, WorkerStart } from './contention-worker.js';
import { ServerStats, type ServerWork, workBetween } from './server-stats.js';
import { jain, median, nowMs, percentile, round } from './stats.js';

const PROCESSES = 5;
const WORKERS_PER_PROCESS = 2;
const TTL_MS = 10_000;
const HOLD_MS = 1;
const SETUP_TIMEOUT_MS = 30_000;
const REPORT_GRACE_MS = 5_000;
const WORKER_FILE = new URL('./contention-worker.ts', import.meta.url);
/** Reference rows: no retry settings to tune. */
const REFERENCES = new Set(['ioredis floor', 'ioredis hand-off floor']);

/** Figures of one run; the scenario's rows hold the median of each over repetitions. */
export interface ContentionFigures {
  readonly acquisitionsPerSec: number;
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
  readonly waitMaxMs: number;
  readonly handoffP50Ms: number;
  readonly handoffP99Ms: number;
  /** The hand-off gap counting only hand-offs to a different worker. */
  readonly otherWorkerHandoffP50Ms: number;
  readonly otherWorkerHandoffP99Ms: number;
  /** Share of hand-offs where the worker that just released acquires again. */
  readonly sameWorkerShare: number;
  readonly jain: number;
  readonly minPerWorker: number;
  readonly maxPerWorker: number;
  readonly acquireFailures: number;
  readonly releaseFailures: number;
  /** Hand-offs where the next holder acquired before the previous one began releasing. */
  readonly overlaps: number;
  /** Workers whose process did not report within 5 s of the deadline, and was killed. */
  readonly unreportedWorkers: number;
  /**
   * CPU per acquisition (µs): the five client processes' (user + system, waiters included)
   * from the start to the end of their workers' loops, and the Redis main thread's (`INFO
   * cpu`) from the start until every process reported (their clients' close included: a few
   * commands). Against the machine's cores and the acquisitions' pace, they show whether the
   * run was CPU-bound. NaN when a process did not report.
   */
  readonly clientCpuUsPerAcquisition: number;
  readonly serverCpuUsPerAcquisition: number;
}

export interface ContentionRow extends ContentionFigures {
  readonly contender: string;
  readonly tuning: Tuning | 'n/a';
  /** Per-worker acquisition counts of each repetition. */
  readonly perWorkerCounts: number[][];
}

type ChildOutcome = Extract<WorkerReport, { type: 'done' }> | undefined;

async function runOnce(
  spec: ContenderSpec,
  tuning: Tuning,
  url: string,
  seconds: number,
  server: ServerStats,
) {
  const key = `bench:c:${spec.name.replace(/\W+/g, '')}:${Math.random().toString(36).slice(2, 8)}`;
  const children = forkWorkers(WORKER_FILE, PROCESSES);
  try {
    const ready = children.map((child) =>
      awaitMessage<WorkerReport>(child, 'ready', SETUP_TIMEOUT_MS),
    );
    children.forEach((child, i) => {
      const workerIds = workerIdsOf(i, WORKERS_PER_PROCESS);
      const setup: WorkerSetup = {
        type: 'setup',
        contender: spec.name,
        tuning,
        url,
        key,
        workerIds,
        ttlMs: TTL_MS,
        holdMs: HOLD_MS,
      };
      child.send(setup);
    });
    if ((await Promise.all(ready)).some((m) => !m)) throw new Error(`${spec.name}: setup failed`);
    const deadline = nowMs() + seconds * 1_000;
    const done = children.map((child) =>
      awaitMessage<WorkerReport>(child, 'done', seconds * 1_000 + REPORT_GRACE_MS),
    );
    const before = await server.read();
    for (const child of children) child.send({ type: 'start', deadline } satisfies WorkerStart);
    const outcomes = (await Promise.all(done)) as ChildOutcome[];
    const serverWork = workBetween(before, await server.read());
    return figures(outcomes, deadline, seconds, serverWork);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

function figures(
  outcomes: ChildOutcome[],
  deadline: number,
  seconds: number,
  serverWork: ServerWork,
) {
  const all = outcomes.flatMap((o) => o?.acquisitions ?? []);
  const byAcquired = [...all].sort((a, b) => a.acquired - b.acquired);
  const gaps: number[] = [];
  const otherWorkerGaps: number[] = [];
  for (let i = 1; i < byAcquired.length; i++) {
    const [previous, next] = [byAcquired[i - 1], byAcquired[i]] as [Acquisition, Acquisition];
    gaps.push(next.acquired - previous.releaseStart);
    if (next.worker !== previous.worker)
      otherWorkerGaps.push(next.acquired - previous.releaseStart);
  }
  const counts = Array.from({ length: PROCESSES * WORKERS_PER_PROCESS }, () => 0);
  for (const a of all) counts[a.worker] = (counts[a.worker] ?? 0) + 1;
  const waits = all.map((a) => a.acquired - a.t0);
  const result: ContentionFigures = {
    acquisitionsPerSec: all.filter((a) => a.acquired <= deadline).length / seconds,
    waitP50Ms: percentile(waits, 50),
    waitP99Ms: percentile(waits, 99),
    waitMaxMs: percentile(waits, 100),
    handoffP50Ms: percentile(gaps, 50),
    handoffP99Ms: percentile(gaps, 99),
    otherWorkerHandoffP50Ms: percentile(otherWorkerGaps, 50),
    otherWorkerHandoffP99Ms: percentile(otherWorkerGaps, 99),
    sameWorkerShare: gaps.length ? 1 - otherWorkerGaps.length / gaps.length : 0,
    jain: jain(counts),
    minPerWorker: Math.min(...counts),
    maxPerWorker: Math.max(...counts),
    acquireFailures: outcomes.reduce((sum, o) => sum + (o?.acquireFailures ?? 0), 0),
    releaseFailures: outcomes.reduce((sum, o) => sum + (o?.releaseFailures ?? 0), 0),
    overlaps: gaps.filter((gap) => gap < 0).length,
    unreportedWorkers: outcomes.filter((o) => !o).length * WORKERS_PER_PROCESS,
    ...cpuPerAcquisition(outcomes, all.length, serverWork),
  };
  return { result, counts };
}

/**
 * CPU per acquisition, client and server; NaN (reported as such) when a process did not
 * report, whose CPU and acquisitions are then unknown, or when nothing was acquired.
 */
function cpuPerAcquisition(outcomes: ChildOutcome[], acquisitions: number, server: ServerWork) {
  const known = acquisitions > 0 && outcomes.every((o) => o !== undefined);
  const clientCpuUs = outcomes.reduce((sum, o) => sum + (o?.cpuUs ?? 0), 0);
  return {
    clientCpuUsPerAcquisition: known ? clientCpuUs / acquisitions : Number.NaN,
    serverCpuUsPerAcquisition: known ? server.cpuUs / acquisitions : Number.NaN,
  };
}

const DIGITS: Partial<Record<keyof ContentionFigures, number>> = {
  acquisitionsPerSec: 0,
  clientCpuUsPerAcquisition: 0,
  serverCpuUsPerAcquisition: 0,
  sameWorkerShare: 3,
  jain: 3,
};

/** Every contender on node 0, defaults then tuned, repetitions interleaved. */
export async function contention(
  redis: RedisNodes,
  options: { seconds: number; reps: number; only?: (spec: ContenderSpec) => boolean },
): Promise<ContentionRow[]> {
  const url = redis.urls[0] as string;
  const cells: { spec: ContenderSpec; tuning: Tuning; label: ContentionRow['tuning'] }[] = [];
  for (const spec of CONTENDERS.filter(
    (s) => s.singleNode && !s.uncontendedOnly && (options.only?.(s) ?? true),
  )) {
    if (REFERENCES.has(spec.name)) cells.push({ spec, tuning: 'defaults', label: 'n/a' });
    else
      for (const tuning of ['defaults', 'tuned'] as const)
        cells.push({ spec, tuning, label: tuning });
  }
  const runs = cells.map(() => [] as { result: ContentionFigures; counts: number[] }[]);
  const server = await ServerStats.open([url]);
  try {
    for (let rep = 0; rep < options.reps; rep++) {
      for (const [i, cell] of cells.entries()) {
        runs[i]?.push(await runOnce(cell.spec, cell.tuning, url, options.seconds, server));
        process.stderr.write(`  contention: ${cell.spec.name} (${cell.label}) rep ${rep + 1}\n`);
      }
    }
  } finally {
    server.close();
  }
  return cells.map((cell, i) => {
    const results = runs[i] ?? [];
    const keys = Object.keys(results[0]?.result ?? {}) as (keyof ContentionFigures)[];
    const medians = Object.fromEntries(
      keys.map((k) => [k, round(median(results.map((r) => r.result[k])), DIGITS[k] ?? 2)]),
    ) as unknown as ContentionFigures;
    return {
      contender: cell.spec.name,
      tuning: cell.label,
      ...medians,
      perWorkerCounts: results.map((r) => r.counts),
    };
  });
}
