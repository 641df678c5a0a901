/** A pool of worker threads running schedules (explore-worker.ts), for `npm run simulate` and the tests. */
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { Outcome } from './explore-worker.js';
import { FULL_SHAPE, type ScheduleShape } from './shape.js';
import { bundleWorker } from './worker-bundle.js';

/**
 * Runs schedules on `workers` worker threads, one at a time each, with the seeds `nextSeed`
 * gives until it gives none, under `shape`, and hands each outcome to `onOutcome` as it comes.
 */
export function explorePool(
  workers: number,
  nextSeed: () => number | undefined,
  onOutcome: (outcome: Outcome) => void,
  shape: ScheduleShape = FULL_SHAPE,
): Promise<void> {
  // Less inlining for V8's optimizing compiler:
  // a schedule is short and runs much code once, so the compiler's background threads spent
  // 3.5 s of CPU in a run of 100 seeds that took about 4 s. With a fifth of the default budget
  // (200 bytes of bytecode against 920), seeds 1 to 200 on one worker pinned to one core ran
  // at 28.5-29.3 schedules a second against 26.0-26.3, and seeds 1 to 600 on two workers at
  // 54-56 against 49-51. It changes how fast code gets, never what it does: the histories are
  // the same. Set when a pool starts; V8's flags are the whole process's (the threads share
  // them), so a test process that runs a pool keeps it for its other files' code too.
  setFlagsFromString('--max-inlined-bytecode-size-cumulative=200');
  return workerFile().then((file) => runPool(file, workers, nextSeed, onOutcome, shape));
}

/** The worker's code, bundled once per process (see worker-bundle.ts). */
let bundled: Promise<string> | undefined;

function workerFile(): Promise<string> {
  bundled ??= bundleWorker();
  return bundled;
}

function runPool(
  file: string,
  workers: number,
  nextSeed: () => number | undefined,
  onOutcome: (outcome: Outcome) => void,
  shape: ScheduleShape,
): Promise<void> {
  // Source maps, so that an error a worker throws names the sources' lines.
  const start = () => new Worker(file, { execArgv: ['--enable-source-maps'] });
  return new Promise((resolve, reject) => {
    let busy = 0;
    const run = (worker: Worker) => {
      const seed = nextSeed();
      if (seed === undefined) {
        void worker.terminate();
        if (busy === 0) resolve();
        return;
      }
      busy += 1;
      // A schedule that never ends (a loop that never lets virtual time move) is a failure
      // too; its worker is replaced.
      const limit = setTimeout(() => {
        worker.removeAllListeners();
        void worker.terminate();
        busy -= 1;
        onOutcome(hung(seed));
        run(listen(start()));
      }, SCHEDULE_REAL_MS);
      worker.once('message', (outcome: Outcome) => {
        clearTimeout(limit);
        busy -= 1;
        onOutcome(outcome);
        run(worker);
      });
      worker.postMessage({ seed, shape });
    };
    const listen = (worker: Worker) => worker.on('error', reject);
    for (let i = 0; i < workers; i++) run(listen(start()));
  });
}

/** Real time a schedule may take before it counts as hung (ms); most take 0.3 to 3 s. */
const SCHEDULE_REAL_MS = 60_000;

function hung(seed: number): Outcome {
  return {
    seed,
    violations: [
      `did not finish within ${SCHEDULE_REAL_MS / 1000} s of real time (a loop that never lets virtual time move?)`,
    ],
    holdings: 0,
    faults: 0,
    servedWithinMs: Number.POSITIVE_INFINITY,
    livenessBoundMs: 0,
  };
}
