/**
 * The fault suite's CLI scenario. Two `distlock run` loops share one key, two `distlock cron`
 * instances (every second) another. Every job ignores SIGTERM and would run for far longer
 * than its lease (8 s, on `--ttl 1s` or `--at-most 1.5s`), so only a SIGKILL before the lease
 * runs out keeps it from the next job. For each key a nemesis takes the job that just started,
 * finds the distlock that runs it in the job log (each job logs its process group and its
 * distlock's pid), and a few hundred ms into the job SIGKILLs that distlock, or SIGSTOPs it
 * until the key's next job has started (then SIGCONT). A round "could catch" an overlap when
 * that next job started while the job hit would still run had nothing stopped it; the
 * nemesis goes on until each fault had {@link ROUNDS} such rounds on each command (and for
 * FAULT_SECONDS at least). A watch reads the job logs and the jobs' groups every few ms
 * (test/support/job-log.ts): no two jobs of one key may run at once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupRunning } from '../../src/cli/process-group.js';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';
import { CLI } from '../support/cli.js';
import { JobLogWatch, type JobSeen, logStart } from '../support/job-log.js';

/** The nemeses go on at least this long, and until each has its {@link ROUNDS}. */
const SECONDS = Number(process.env.FAULT_SECONDS ?? 3);
/** Rounds that could catch an overlap, per command and fault. */
const ROUNDS = 3;
/** How long a job would run had nothing stopped it: far past its lease. */
const JOB_MS = 8_000;
/**
 * How long after the watch saw a job start it surely still runs had nothing stopped it (the
 * watch sees a start late by its poll and by how busy the machine is: 1 s is ample).
 */
const WOULD_RUN_MS = JOB_MS - 1_000;
/** No more rounds are started after this long, caught or not (the check then says so). */
const GIVE_UP_MS = (SECONDS + 90) * 1_000;
const FAULTS = ['SIGKILL', 'SIGSTOP'] as const;
type Fault = (typeof FAULTS)[number];

const COMMANDS = {
  run: ['run', '--key', 'job', '--ttl', '1s', '--wait', '60s', '--grace', '200ms'],
  cron: ['cron', '* * * * * *', '--key', 'job', '--at-most', '1500ms', '--grace', '200ms'],
} as const;
type Command = keyof typeof COMMANDS;

let redis: RedisNodes;
const dir = mkdtempSync(join(tmpdir(), 'distlock-cli-faults-'));

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const between = (low: number, high: number) => low + Math.random() * (high - low);

/** SIGKILLs a job's process group, unless it is already gone. */
function killGroup(group: number): void {
  try {
    process.kill(-group, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** One job hit by the nemesis, and the key's next job (if it came before the first would end). */
interface Round {
  readonly fault: Fault;
  readonly hit: JobSeen;
  readonly next: JobSeen | undefined;
}

/** Whether a round's next job started while the job hit would still run, unstopped. */
const couldCatch = ({ hit, next }: Round) =>
  next !== undefined && next.startedAt < hit.startedAt + WOULD_RUN_MS;

describe('fault suite: the CLI', { timeout: GIVE_UP_MS + 60_000 }, () => {
  it('run and cron SIGKILLed and SIGSTOPped mid-job: no two jobs of a key overlap', async () => {
    const started = performance.now();
    const instances = new Set<ChildProcess>();
    let over = false;

    /** Starts `command` again each time it exits, until the scenario is over. */
    const loop = async (command: Command, log: string) => {
      // A job deaf to SIGTERM, that logs its start, then runs for JOB_MS.
      const job = `trap '' TERM; ${logStart(log)}; sleep ${JOB_MS / 1_000}`;
      const args = [CLI, ...COMMANDS[command], '--redis', redis.urls[0] as string];
      while (!over) {
        const child = spawn(process.execPath, [...args, '--', 'sh', '-c', job], {
          stdio: ['ignore', 'ignore', 'ignore'],
        });
        instances.add(child);
        await new Promise((resolve) => child.once('exit', resolve));
        instances.delete(child);
      }
    };
    const alive = (pid: number) =>
      [...instances].find((c) => c.pid === pid && c.exitCode === null && c.signalCode === null);

    /** Hits the distlock of each job of `watch` as it starts, until the rounds are enough. */
    const nemesis = async (watch: JobLogWatch): Promise<Round[]> => {
      const rounds: Round[] = [];
      const caught = (fault: Fault) =>
        rounds.filter((round) => round.fault === fault && couldCatch(round)).length;
      const enough = () =>
        performance.now() - started >= SECONDS * 1_000 &&
        FAULTS.every((fault) => caught(fault) >= ROUNDS);
      let count = 1;
      // The first job: the instances start, under Node, all at once on a busy machine.
      let hit = await watch.startedWithin(count, 30_000);
      while (hit !== undefined && !enough() && performance.now() - started < GIVE_UP_MS) {
        await delay(between(0, 300)); // into the job, well before its lease can run out
        const distlock = alive(hit.distlock);
        if (distlock === undefined || hit.endedAt !== undefined) {
          hit = await watch.startedWithin(++count, JOB_MS); // hit already gone: the next one
          continue;
        }
        // The fault that has caught least so far (SIGKILL first when even): they alternate.
        const fault = [...FAULTS].sort((a, b) => caught(a) - caught(b))[0] as Fault;
        distlock.kill(fault);
        const next = await watch.startedWithin(
          ++count,
          hit.startedAt + WOULD_RUN_MS - performance.now(),
        );
        if (fault === 'SIGSTOP') distlock.kill('SIGCONT');
        rounds.push({ fault, hit, next });
        hit = next ?? (await watch.startedWithin(count, JOB_MS));
      }
      return rounds;
    };

    const watches = {
      run: new JobLogWatch(join(dir, 'run.log')),
      cron: new JobLogWatch(join(dir, 'cron.log')),
    };
    const loops = (['run', 'run', 'cron', 'cron'] as const).map((command) =>
      loop(command, join(dir, `${command}.log`)),
    );
    const [runRounds, cronRounds] = await Promise.all([
      nemesis(watches.run),
      nemesis(watches.cron),
    ]);
    over = true;
    // The jobs still running are deaf to SIGTERM: SIGKILLed first, so that nothing waits for
    // their grace period.
    const stopJobs = () => {
      for (const seen of [...watches.run.jobs, ...watches.cron.jobs]) {
        if (seen.endedAt === undefined && groupRunning(seen.group)) killGroup(seen.group);
      }
    };
    stopJobs();
    for (const child of instances) child.kill('SIGTERM');
    await Promise.all(loops);
    watches.run.stop();
    watches.cron.stop();
    stopJobs();

    const rounds: Record<Command, Round[]> = { run: runRounds, cron: cronRounds };
    const faultOf = (command: Command, job: JobSeen) =>
      rounds[command].find((round) => round.hit === job)?.fault;
    const report = (command: Command) => {
      const { jobs, overlapping } = watches[command];
      // Jobs still running when a later one started, by what hit their distlock.
      const overlapped = (fault: Fault | undefined) =>
        new Set(overlapping.flatMap(([job]) => (faultOf(command, job) === fault ? [job] : [])))
          .size;
      const perFault = FAULTS.map((fault) => {
        const hit = rounds[command].filter((round) => round.fault === fault);
        return `${fault} ${hit.length} (${hit.filter(couldCatch).length} could catch, ${overlapped(fault)} overlapped)`;
      });
      return `${command}: ${jobs.length} jobs; ${perFault.join(', ')}; ${overlapped(undefined)} jobs not hit overlapped`;
    };
    const seconds = ((performance.now() - started) / 1_000).toFixed(1);
    console.log(`CLI fault scenario, ${seconds} s. ${report('run')}. ${report('cron')}`);

    const overlaps = (['run', 'cron'] as const).flatMap((command) =>
      watches[command].overlapping.map(
        ([earlier, later]) =>
          `${command}: job ${earlier.group} (${faultOf(command, earlier) ?? 'not hit'}) still ran when job ${later.group} started`,
      ),
    );
    expect(overlaps).toEqual([]);
    for (const command of ['run', 'cron'] as const) {
      for (const fault of FAULTS) {
        const catching = rounds[command].filter(
          (round) => round.fault === fault && couldCatch(round),
        );
        expect(
          catching.length,
          `${command}, ${fault}: rounds that could catch an overlap`,
        ).toBeGreaterThanOrEqual(ROUNDS);
      }
    }
  });
});
