/**
 * Scenario 7: counting semaphores. Sixteen workers, in four child processes, each with its own
 * clients and its own instance of the library, ask for permits of ONE semaphore of 4 permits.
 * Each loops acquire (10 s lease, up to 30 s wait), hold ~2 ms, release. On one node,
 * distlock (plain and fair) against redis-semaphore's `Semaphore`; on three nodes, against
 * its `RedlockSemaphore`. Measures throughput, how long a worker waits, fairness, and the most
 * holders at once: permit intervals (acquired, release started) overlapping in time, over all
 * workers, which must never exceed the permits.
 */
import type { RedisNodes } from '../src/testing/index.js';
import { awaitMessage, forkWorkers, workerIdsOf } from './child-workers.js';
import { SEMAPHORE_CONTENDERS, type SemaphoreSpec } from './semaphore-contenders.js';
import type {
  SemaphoreWorkerReport,
  SemaphoreWorkerSetup,
  SemaphoreWorkerStart,
} from './semaphore-worker.js';
import { jain, median, nowMs, percentile, round } from './stats.js';

const PROCESSES = 4;
const WORKERS_PER_PROCESS = 4;
const WORKERS = PROCESSES * WORKERS_PER_PROCESS;
const PERMITS = 4;
const TTL_MS = 10_000;
const WAIT_MS = 30_000;
const HOLD_MS = 2;
/** Node counts: one node, and a Redlock-style set of three. */
const NODE_COUNTS = [1, 3] as const;
const SETUP_TIMEOUT_MS = 30_000;
/** How long a worker still waiting at the deadline may go on waiting before it gives up. */
const DRAIN_MS = 3_000;
/** After the drain, how long a child may take to report before it is killed. */
const REPORT_GRACE_MS = 5_000;
const WORKER_FILE = new URL('./semaphore-worker.ts', import.meta.url);

/** Figures of one run; the scenario's rows hold the median of each over repetitions. */
export interface SemaphoreFigures {
  readonly acquisitionsPerSec: number;
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
  readonly waitMaxMs: number;
  /** The most permit intervals (acquired, release started) that overlapped at one instant. */
  readonly mostHolders: number;
  /** Acquisitions that took the holders at once above the permits (must be 0). */
  readonly overPermits: number;
  readonly jain: number;
  readonly minPerWorker: number;
  readonly maxPerWorker: number;
  readonly acquireFailures: number;
  readonly releaseFailures: number;
  /** Waits still going `DRAIN_MS` after the deadline, given up. */
  readonly abandoned: number;
  /** Workers whose process did not report in time, and was killed. */
  readonly unreportedWorkers: number;
}

export interface SemaphoreRow extends SemaphoreFigures {
  readonly contender: string;
  readonly nodes: number;
  readonly permits: number;
  readonly workers: number;
  /** The most holders at once in any repetition (the row's `mostHolders` is the median). */
  readonly mostHoldersEver: number;
  /** Acquisitions above the permits, over all repetitions. */
  readonly overPermitsTotal: number;
  /** Per-worker acquisition counts of each repetition. */
  readonly perWorkerCounts: number[][];
}

type ChildOutcome = Extract<SemaphoreWorkerReport, { type: 'done' }> | undefined;

async function runOnce(spec: SemaphoreSpec, urls: readonly string[], seconds: number) {
  const key = `bench:s:${spec.name.replace(/\W+/g, '')}:${Math.random().toString(36).slice(2, 8)}`;
  const children = forkWorkers(WORKER_FILE, PROCESSES);
  try {
    const ready = children.map((child) =>
      awaitMessage<SemaphoreWorkerReport>(child, 'ready', SETUP_TIMEOUT_MS),
    );
    children.forEach((child, i) => {
      const workerIds = workerIdsOf(i, WORKERS_PER_PROCESS);
      const setup: SemaphoreWorkerSetup = {
        type: 'setup',
        contender: spec.name,
        urls,
        key,
        workerIds,
        permits: PERMITS,
        ttlMs: TTL_MS,
        waitMs: WAIT_MS,
        holdMs: HOLD_MS,
        drainMs: DRAIN_MS,
      };
      child.send(setup);
    });
    if ((await Promise.all(ready)).some((m) => !m)) throw new Error(`${spec.name}: setup failed`);
    const deadline = nowMs() + seconds * 1_000;
    const done = children.map((child) =>
      awaitMessage<SemaphoreWorkerReport>(
        child,
        'done',
        seconds * 1_000 + DRAIN_MS + REPORT_GRACE_MS,
      ),
    );
    for (const child of children) {
      child.send({ type: 'start', deadline } satisfies SemaphoreWorkerStart);
    }
    return figures((await Promise.all(done)) as ChildOutcome[], deadline, seconds);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/**
 * The most intervals open at once: +1 at each `acquired`, -1 at each `releaseStart`, a
 * release counted first when both fall on the same instant. As a counter every worker
 * increments once its acquire resolved and decrements before it calls release. Also how
 * many acquisitions took the count above `permits`.
 */
export function holdersAtOnce(
  intervals: readonly { acquired: number; releaseStart: number }[],
  permits: number,
): { most: number; overPermits: number } {
  const events = intervals.flatMap((i) => [
    [i.acquired, 1] as const,
    [i.releaseStart, -1] as const,
  ]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  let overPermits = 0;
  for (const [, step] of events) {
    open += step;
    most = Math.max(most, open);
    if (step > 0 && open > permits) overPermits++;
  }
  return { most, overPermits };
}

function figures(outcomes: ChildOutcome[], deadline: number, seconds: number) {
  const all = outcomes.flatMap((o) => o?.acquisitions ?? []);
  const counts = Array.from({ length: WORKERS }, () => 0);
  for (const a of all) counts[a.worker] = (counts[a.worker] ?? 0) + 1;
  const waits = all.map((a) => a.acquired - a.t0);
  const holders = holdersAtOnce(all, PERMITS);
  const sum = (figure: (o: NonNullable<ChildOutcome>) => number) =>
    outcomes.reduce((total, o) => total + (o ? figure(o) : 0), 0);
  const result: SemaphoreFigures = {
    acquisitionsPerSec: all.filter((a) => a.acquired <= deadline).length / seconds,
    waitP50Ms: percentile(waits, 50),
    waitP99Ms: percentile(waits, 99),
    waitMaxMs: percentile(waits, 100),
    mostHolders: holders.most,
    overPermits: holders.overPermits,
    jain: jain(counts),
    minPerWorker: Math.min(...counts),
    maxPerWorker: Math.max(...counts),
    acquireFailures: sum((o) => o.acquireFailures),
    releaseFailures: sum((o) => o.releaseFailures),
    abandoned: sum((o) => o.abandoned),
    unreportedWorkers: outcomes.filter((o) => !o).length * WORKERS_PER_PROCESS,
  };
  return { result, counts };
}

const DIGITS: Partial<Record<keyof SemaphoreFigures, number>> = {
  acquisitionsPerSec: 0,
  jain: 3,
};

/** Every contender on 1 node, then on 3 nodes, repetitions interleaved. */
export async function semaphore(
  redis: RedisNodes,
  options: { seconds: number; reps: number; only?: (spec: { name: string }) => boolean },
): Promise<SemaphoreRow[]> {
  const cells: { spec: SemaphoreSpec; nodes: number }[] = [];
  for (const nodes of NODE_COUNTS) {
    for (const spec of SEMAPHORE_CONTENDERS) {
      if (!(nodes === 1 ? spec.singleNode : spec.multiNode)) continue;
      if (options.only?.(spec) ?? true) cells.push({ spec, nodes });
    }
  }
  const runs = cells.map(() => [] as { result: SemaphoreFigures; counts: number[] }[]);
  for (let rep = 0; rep < options.reps; rep++) {
    for (const [i, cell] of cells.entries()) {
      const urls = redis.urls.slice(0, cell.nodes);
      runs[i]?.push(await runOnce(cell.spec, urls, options.seconds));
      process.stderr.write(
        `  semaphore: ${cell.spec.name} on ${cell.nodes} node(s) rep ${rep + 1}: ` +
          `most holders at once ${runs[i]?.at(-1)?.result.mostHolders} of ${PERMITS}, ` +
          `acquisitions above the permits ${runs[i]?.at(-1)?.result.overPermits}\n`,
      );
    }
  }
  return cells.map((cell, i) => {
    const results = runs[i] ?? [];
    const keys = Object.keys(results[0]?.result ?? {}) as (keyof SemaphoreFigures)[];
    const medians = Object.fromEntries(
      keys.map((k) => [k, round(median(results.map((r) => r.result[k])), DIGITS[k] ?? 2)]),
    ) as unknown as SemaphoreFigures;
    return {
      contender: cell.spec.name,
      nodes: cell.nodes,
      permits: PERMITS,
      workers: WORKERS,
      ...medians,
      mostHoldersEver: Math.max(...results.map((r) => r.result.mostHolders)),
      overPermitsTotal: results.reduce((total, r) => total + r.result.overPermits, 0),
      perWorkerCounts: results.map((r) => r.counts),
    };
  });
}
