/** A pool of worker threads running schedules (explore-worker.ts), for `npm run simulate` and the tests. */
import { Worker } from 'node:worker_threads';
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
  // The worker runs TypeScript as this process does: through tsx, registered in the thread.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./explore-worker.ts', import.meta.url).href;
  const source = `const { register } = await import(${JSON.stringify(tsx)}); register(); await import(${JSON.stringify(entry)});`;
  return new Promise((resolve, reject) => {
    let busy = 0;
    const pool = Array.from({ length: workers }, () => new Worker(source, { eval: true }));
    const feed = (worker: Worker) => {
      const seed = nextSeed();
      if (seed === undefined) {
        void worker.terminate();
        if (busy === 0) resolve();
        return;
      }
      busy += 1;
      worker.postMessage({ seed, shape });
    };
    for (const worker of pool) {
      worker.on('message', (outcome: Outcome) => {
        busy -= 1;
        onOutcome(outcome);
        feed(worker);
      });
      worker.on('error', reject);
      feed(worker);
    }
  });
}
