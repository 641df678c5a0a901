/**
 * Scheduled jobs in the workload: in schedules that draw every kind of acquisition, every
 * client runs `schedule()` for one job every second, as each instance of a fleet would. The
 * job records each run; `onTick` records what the tick did.
 *
 * The oracle: a tick runs at most once across the clients, unless a run of it was `lost`
 * (the documented case where another instance may take it meanwhile); and once faults have
 * stopped and every waiter was served, every tick runs; with faults on a minority of the
 * nodes only, every tick of the workload runs too, unless no try got a majority for it until
 * its window closed (see `scheduleTicks`).
 */
import { NoQuorumError, schedule, type TickOutcome } from '../src/index.js';
import { quorumOf } from '../src/quorum/tally.js';
import { Random } from './random.js';
import { pause } from './virtual-time.js';
import type { Client } from './workload.js';

/** The scheduled job's name, and its cron: every second. */
const JOB = 'j0';
const EVERY_SECOND = '* * * * * *';

/** One run of the job, by one client. */
export interface TickRun {
  readonly client: number;
  /** The cron instant it stands for (virtual ms since the epoch). */
  readonly scheduledAt: number;
  /** What `onTick` said of it; absent until then. */
  outcome?: TickOutcome;
  /**
   * When `onTick` reported the outcome: the schedule's handling of the tick (taking the lock,
   * the job, letting the lock go) ended then, and a fire before it was skipped.
   */
  reportedAt?: number;
}

/** How the clients' schedules lock each tick, and how long the job runs. */
export interface TickTimes {
  readonly lockAtMostFor: number;
  readonly lockAtLeastFor: number;
  readonly longestJobMs: number;
}

/**
 * Draws the times: `lockAtLeastFor` long enough to cover the per-node timeout and timer
 * lateness twice over, jobs that sometimes outlive `lockAtMostFor` (a lost tick).
 */
export function drawTickTimes(random: Random): TickTimes {
  const lockAtLeastFor = random.int(200, 500);
  const lockAtMostFor = random.int(lockAtLeastFor, 900);
  return { lockAtMostFor, lockAtLeastFor, longestJobMs: Math.round(lockAtMostFor * 1.2) };
}

/**
 * Starts the job on every client; `stop` stops every schedule and waits for running jobs.
 * `unreachedTicks` gets the ticks (cron instants) that some client gave up on with a
 * `NoQuorumError` only once its window was over (half of `lockAtLeastFor` after the fire),
 * its last try's votes short of a majority: asked again for the whole window, no try got
 * one (votes split between instances, or replies later than the per-node timeout), the
 * documented way a tick is lost while a majority of the nodes is up (docs/scheduled-jobs.md).
 */
export function scheduleTicks(
  clients: readonly Client[],
  times: TickTimes,
  random: Random,
  runs: TickRun[],
  note: (line: string) => void,
): { stop(): Promise<void>; readonly unreachedTicks: ReadonlySet<number> } {
  const { lockAtMostFor, lockAtLeastFor, longestJobMs } = times;
  const unreachedTicks = new Set<number>();
  const schedules = clients.map((client) => {
    const own = new Random(random.int(0, 2 ** 32 - 1));
    const mine = new Map<number, TickRun>();
    return schedule(
      client.locker,
      JOB,
      EVERY_SECOND,
      {
        lockAtMostFor,
        lockAtLeastFor,
        onTick: (outcome, scheduledAt, error) => {
          const windowEnd = scheduledAt.getTime() + lockAtLeastFor / 2 - WINDOW_SLACK_MS;
          if (error instanceof NoQuorumError && Date.now() >= windowEnd && short(error)) {
            unreachedTicks.add(scheduledAt.getTime());
          }
          const run = mine.get(scheduledAt.getTime());
          if (run) {
            run.outcome = outcome;
            run.reportedAt = Date.now();
          }
          const why = error ? ` ${(error as Error).name}: ${(error as Error).message}` : '';
          note(`c${client.id} ${JOB} tick ${scheduledAt.toISOString()} ${outcome}${why}`);
        },
      },
      async ({ scheduledAt }) => {
        const run: TickRun = { client: client.id, scheduledAt: scheduledAt.getTime() };
        mine.set(run.scheduledAt, run);
        runs.push(run);
        await pause(own.next() * longestJobMs);
      },
    );
  });
  return {
    unreachedTicks,
    async stop() {
      await Promise.all(schedules.map((job) => job.stop()));
    },
  };
}

/** Whether the last try's votes, all counted, fall short of a majority of the nodes. */
function short(error: NoQuorumError): boolean {
  const yes = error.nodes.filter((node) => node.outcome === 'yes').length;
  return yes < quorumOf(error.nodes.length);
}

/** A tick's window ends half of `lockAtLeastFor` after it was asked, not before its fire. */
const WINDOW_SLACK_MS = 2;

/**
 * What is wrong with `runs`: a tick run twice with neither run lost, and a tick in
 * `[mustRunFrom, mustRunTo)` (virtual ms since the epoch) that ran nowhere, unless every
 * client open then (`openAt`, their ids) was still handling an earlier tick whose job it ran,
 * from its fire to its reported outcome (the job, and letting a lost lock go after it): a
 * schedule skips a fire while its own previous one goes on (croner's `protect`), as
 * documented. A fire whose take failed leaves no record: `schedule()` gives a take up within
 * half of `lockAtLeastFor`, less than the second between fires, so it never holds one back.
 */
export function tickViolations(
  runs: readonly TickRun[],
  mustRunFrom: number,
  mustRunTo: number,
  openAt?: (tick: number) => readonly number[],
): string[] {
  const found: string[] = [];
  for (const [scheduledAt, same] of runsByTick(runs)) {
    if (same.length > 1 && !same.some((run) => run.outcome === 'lost')) {
      const by = same.map((run) => `c${run.client} (${run.outcome ?? 'running'})`).join(', ');
      found.push(
        `${JOB} tick ${new Date(scheduledAt).toISOString()} ran ${same.length} times: ${by}`,
      );
    }
  }
  found.push(...missedTicks(runs, mustRunFrom, mustRunTo, openAt, 'after faults stopped'));
  return found;
}

/**
 * The ticks in `[mustRunFrom, mustRunTo)` that ran nowhere, though a client open then was free
 * to run them (see {@link tickViolations}); `when` says in the report when they had to run.
 */
export function missedTicks(
  runs: readonly TickRun[],
  mustRunFrom: number,
  mustRunTo: number,
  openAt: ((tick: number) => readonly number[]) | undefined,
  when: string,
  excused: ReadonlySet<number> = new Set(),
): string[] {
  const found: string[] = [];
  const byTick = runsByTick(runs);
  const first = Math.ceil(mustRunFrom / 1_000) * 1_000;
  const busy = (client: number, tick: number) =>
    runs.some(
      (run) =>
        run.client === client &&
        run.scheduledAt < tick &&
        (run.reportedAt ?? Number.POSITIVE_INFINITY) >= tick,
    );
  const skipped = (tick: number) => {
    const open = openAt?.(tick) ?? [];
    return open.length > 0 && open.every((client) => busy(client, tick));
  };
  for (let tick = first; tick < mustRunTo; tick += 1_000) {
    if (!byTick.has(tick) && !skipped(tick) && !excused.has(tick)) {
      found.push(`${JOB} tick ${new Date(tick).toISOString()} ran nowhere, ${when}`);
    }
  }
  return found;
}

function runsByTick(runs: readonly TickRun[]): Map<number, TickRun[]> {
  const byTick = new Map<number, TickRun[]>();
  for (const run of runs) {
    const same = byTick.get(run.scheduledAt) ?? [];
    same.push(run);
    byTick.set(run.scheduledAt, same);
  }
  return byTick;
}
