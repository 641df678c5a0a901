/**
 * Runs schedules of the simulation and reports the ones whose history breaks the oracle.
 *
 *   npm run simulate -- --seeds 200            200 schedules, from a random first seed
 *   npm run simulate -- --minutes 5            as many as fit in 5 minutes
 *   npm run simulate -- --seeds 200 --from 1   seeds 1 to 200
 *   npm run simulate -- --seed 1234            replays one seed and prints its history
 *   ... --workers 2                            worker threads (default: one per core)
 *   ... --seed 1234 --off reset,crash --workload-ms 1000 --clients 2
 *                                              replays a shrunk schedule (see shape.ts)
 *   ... --focus late-requests                  every schedule with that focus
 *
 * A failure prints its seed and violations, then (for the first three) the schedule shrunk
 * and the one command that replays it. Exits 1 when a schedule failed.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import type { Outcome } from './explore-worker.js';
import { explorePool } from './pool.js';
import { runSchedule } from './schedule.js';
import {
  parseFaultKinds,
  parseFocus,
  type ScheduleShape,
  shapeOptions,
  WORKLOAD_MS,
} from './shape.js';
import { shrink } from './shrink.js';

/** Failures shrunk at the end of a run (each takes a few dozen schedules). */
const SHRUNK_AT_MOST = 3;

const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    minutes: { type: 'string' },
    from: { type: 'string' },
    seed: { type: 'string' },
    workers: { type: 'string' },
    off: { type: 'string' },
    'workload-ms': { type: 'string' },
    clients: { type: 'string' },
    focus: { type: 'string' },
  },
});

function count(name: keyof typeof values, least = 0): number | undefined {
  const text = values[name];
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < least) {
    throw new Error(`Expected --${name} to be a number >= ${least}, got ${text}`);
  }
  return value;
}

function shapeOf(): ScheduleShape {
  return {
    off: parseFaultKinds(values.off ?? ''),
    workloadMs: count('workload-ms', 1) ?? WORKLOAD_MS,
    clients: count('clients', 2),
    focus: parseFocus(values.focus),
  };
}

function replayCommand(seed: number, shape: ScheduleShape): string {
  return ['npm run simulate -- --seed', seed, ...shapeOptions(shape)].join(' ');
}

async function replay(seed: number, shape: ScheduleShape): Promise<number> {
  const result = await runSchedule(seed, shape);
  console.log(result.log.join('\n'));
  for (const violation of result.violations) console.log(`VIOLATION ${violation}`);
  console.log(`${result.faults} faults; replay: ${replayCommand(seed, shape)}`);
  return result.violations.length === 0 ? 0 : 1;
}

async function explore(shape: ScheduleShape): Promise<number> {
  const first = count('from') ?? Math.floor(Math.random() * 2 ** 31);
  const minutes = count('minutes');
  const until = minutes === undefined ? Number.POSITIVE_INFINITY : Date.now() + minutes * 60_000;
  const total = count('seeds') ?? (minutes === undefined ? 100 : Number.POSITIVE_INFINITY);
  const workers = count('workers', 1) ?? availableParallelism();
  const started = Date.now();
  const failures: Outcome[] = [];
  let sent = 0;
  let done = 0;
  let holdings = 0;
  let faults = 0;
  let servedWithinMs = 0;
  let shownAt = 0;
  const progress = (final = false) => {
    const seconds = (Date.now() - started) / 1000;
    const line = `${done} schedules, ${(done / seconds).toFixed(1)}/s, ${holdings} holdings, ${(faults / Math.max(1, done)).toFixed(1)} faults per schedule, ${failures.length} failed`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line}${final ? '\n' : ''}`);
    else if (final || Date.now() - shownAt > 5_000) process.stderr.write(`${line}\n`);
    shownAt = Date.now();
  };
  console.log(`seeds from ${first}, ${workers} worker(s)`);
  await explorePool(
    workers,
    () => (sent < total && Date.now() < until ? first + sent++ : undefined),
    (outcome) => {
      done += 1;
      holdings += outcome.holdings;
      faults += outcome.faults;
      servedWithinMs = Math.max(servedWithinMs, outcome.servedWithinMs);
      if (outcome.violations.length > 0) {
        failures.push(outcome);
        if (process.stderr.isTTY) process.stderr.write('\n');
        console.log(`FAILED seed ${outcome.seed} (schedule ${done}):`);
        for (const violation of outcome.violations) console.log(`  ${violation}`);
        console.log(`  replay: ${replayCommand(outcome.seed, shape)}`);
      }
      if (process.stderr.isTTY || Date.now() - shownAt > 5_000) progress();
    },
    shape,
  );
  progress(true);
  console.log(
    `${done} schedules, ${faults} faults, ${holdings} holdings; once faults stopped, every waiter was served within ${servedWithinMs.toFixed(0)} ms`,
  );
  for (const failure of failures.slice(0, SHRUNK_AT_MOST)) await report(failure.seed, shape);
  return failures.length === 0 ? 0 : 1;
}

/** Shrinks the schedule of a failing seed and prints it, with the command that replays it. */
async function report(seed: number, full: ScheduleShape): Promise<void> {
  console.log(`\nshrinking seed ${seed}...`);
  let runs = 0;
  const shape = await shrink(async (candidate) => {
    runs += 1;
    return (await runSchedule(seed, candidate)).violations.length > 0;
  }, full);
  const result = await runSchedule(seed, shape);
  const faultLines = result.log.filter((line) => line.includes(' fault '));
  console.log(`seed ${seed}, shrunk in ${runs} schedules, ${result.faults} faults:`);
  for (const line of faultLines) console.log(`  ${line}`);
  for (const violation of result.violations) console.log(`  VIOLATION ${violation}`);
  console.log(`  replay: ${replayCommand(seed, shape)}`);
}

const seed = count('seed');
process.exitCode = await (seed === undefined ? explore(shapeOf()) : replay(seed, shapeOf()));
