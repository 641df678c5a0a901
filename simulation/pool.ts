/** A pool of worker threads running schedules (explore-worker.ts), for `npm run simulate` and the tests. */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { threadId, Worker } from 'node:worker_threads';
import { build } from 'esbuild';
import type { Outcome } from './explore-worker.js';
import { FULL_SHAPE, type ScheduleShape } from './shape.js';

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

/** The worker's code bundled once per process, for {@link explorePool} (see `bundleWorker`). */
let bundled: Promise<string> | undefined;

function workerFile(): Promise<string> {
  bundled ??= bundleWorker();
  return bundled;
}

/**
 * explore-worker.ts and the sources it imports, as one JavaScript file (its packages are
 * imported as they are): the same code as tsx runs, without tsx's per-module wrapping (it
 * names every function as it is made). Seeds 1 to 250, one worker on one core: 1.21 times the
 * schedules a second (geometric mean of 4 alternating pairs), the same histories bit for bit.
 * It is written next to the packages (so that they resolve from it), under a name of its own
 * first, then renamed: test files that start pools at once never read half a file.
 */
async function bundleWorker(): Promise<string> {
  const entry = fileURLToPath(new URL('./explore-worker.ts', import.meta.url));
  const directory = fileURLToPath(new URL('../node_modules/.cache/distlock/', import.meta.url));
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node}`,
    packages: 'external',
    sourcemap: 'inline',
    write: false,
    logLevel: 'warning',
    // src/driver/libraries.ts loads some packages with `require` where there is one: in an
    // ES module bundle there is none, and esbuild's stand-in would throw.
    banner: {
      js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);",
    },
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error('bundling the simulation worker produced no file');
  mkdirSync(directory, { recursive: true });
  const file = `${directory}simulation-worker.mjs`;
  const written = `${file}.${process.pid}-${threadId}`;
  writeFileSync(written, output.contents);
  renameSync(written, file);
  return file;
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
