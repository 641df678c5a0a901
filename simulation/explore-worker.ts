/**
 * A worker thread of `npm run simulate`: runs the schedules whose seeds (and shape) the main
 * thread sends, one at a time, and posts back what each found. Every schedule installs virtual time
 * on the worker's own globals, so workers do not disturb each other.
 */
import { parentPort } from 'node:worker_threads';
import { runSchedule } from './schedule.js';
import type { ScheduleShape } from './shape.js';

export interface Outcome {
  readonly seed: number;
  readonly violations: readonly string[];
  readonly holdings: number;
  readonly faults: number;
  readonly servedWithinMs: number;
  readonly livenessBoundMs: number;
}

parentPort?.on('message', async ({ seed, shape }: { seed: number; shape: ScheduleShape }) => {
  const { log: _log, ...outcome } = await runSchedule(seed, shape);
  parentPort?.postMessage(outcome satisfies Outcome);
});
