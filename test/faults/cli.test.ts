/**
 * The fault suite's CLI scenario: `distlock run` loops and `distlock cron` instances run jobs
 * on one key each while a nemesis SIGKILLs them or SIGSTOPs them past their lease (and
 * SIGCONTs them later). Each job logs its start to a job log; a watch reads the log and the
 * jobs' process groups every few ms (test/support/job-log.ts): no two jobs of one key may
 * run at once. The jobs ignore SIGTERM, so only a SIGKILL in time keeps them apart, and
 * outlast their lease (a `run` job 1.5 s on a 1 s TTL, extended while distlock runs; a `cron`
 * job 3 s against `--at-most 1.5s`, so each is stopped before its tick's lock runs out).
 * FAULT_SECONDS sets how long it runs (at least 15 s).
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
import { JobLogWatch, logStart } from '../support/job-log.js';

const SECONDS = Math.max(15, Number(process.env.FAULT_SECONDS ?? 3));
let redis: RedisNodes;
const dir = mkdtempSync(join(tmpdir(), 'distlock-cli-faults-'));

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
const between = (low: number, high: number) => low + Math.random() * (high - low);

/** A job deaf to SIGTERM that logs its start to `log` and runs for `seconds`. */
const job = (log: string, seconds: number) => `trap '' TERM; ${logStart(log)}; sleep ${seconds}`;

/** `distlock` with `args`, on the scenario's node, running `script` under `sh -c`. */
const distlock = (args: readonly string[], script: string): ChildProcess =>
  spawn(
    process.execPath,
    [CLI, ...args, '--redis', redis.urls[0] as string, '--', 'sh', '-c', script],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );

describe('fault suite: the CLI', { timeout: (SECONDS + 40) * 1_000 }, () => {
  it('run and cron instances SIGKILLed and SIGSTOPped: no two jobs of a key overlap', async () => {
    const runLog = join(dir, 'run.log');
    const cronLog = join(dir, 'cron.log');
    const watches = [new JobLogWatch(runLog), new JobLogWatch(cronLog)];
    const instances = new Set<ChildProcess>();
    let over = false;
    const runLoop = async () => {
      while (!over) {
        const args = ['run', '--key', 'job', '--ttl', '1s', '--wait', '5s', '--grace', '10s'];
        const child = distlock(args, job(runLog, 1.5));
        instances.add(child);
        await new Promise((resolve) => child.once('exit', resolve));
        instances.delete(child);
      }
    };
    const cronLoop = async () => {
      while (!over) {
        const args = [
          'cron',
          '* * * * * *',
          '--key',
          'job',
          '--at-most',
          '1500ms',
          '--grace',
          '10s',
        ];
        const child = distlock(args, job(cronLog, 3));
        instances.add(child);
        await new Promise((resolve) => child.once('exit', resolve));
        instances.delete(child);
      }
    };
    const faults = { SIGKILL: 0, SIGSTOP: 0 };
    const paused = new Set<Promise<void>>();
    const nemesis = async () => {
      await delay(2_000); // every instance has started
      while (!over) {
        const target = pick([...instances]);
        if (target?.pid !== undefined && target.exitCode === null) {
          if (Math.random() < 0.5) {
            target.kill('SIGKILL');
            faults.SIGKILL++;
          } else {
            target.kill('SIGSTOP');
            faults.SIGSTOP++;
            // Past the lease (1 s, or --at-most 1.5 s) most of the time.
            const resumed = delay(between(500, 2_500)).then(() => {
              target.kill('SIGCONT');
            });
            paused.add(resumed);
          }
        }
        await delay(between(800, 1_600));
      }
    };
    const loops = [runLoop(), runLoop(), cronLoop(), cronLoop(), nemesis()];
    await delay(SECONDS * 1_000);
    over = true;
    await Promise.all(paused);
    for (const child of instances) child.kill('SIGTERM');
    await Promise.all(loops);
    for (const watch of watches) watch.stop();
    for (const seen of watches.flatMap((watch) => watch.jobs)) {
      if (groupRunning(seen.group)) process.kill(-seen.group, 'SIGKILL');
    }
    const [runs, crons] = watches as [JobLogWatch, JobLogWatch];
    console.log(
      `CLI fault scenario, ${SECONDS} s: ${faults.SIGKILL} SIGKILL, ${faults.SIGSTOP} SIGSTOP; ` +
        `run: ${runs.jobs.length} jobs, ${runs.overlaps.length} overlaps; ` +
        `cron: ${crons.jobs.length} jobs, ${crons.overlaps.length} overlaps`,
    );
    expect(faults.SIGKILL + faults.SIGSTOP).toBeGreaterThan(3);
    expect(runs.jobs.length).toBeGreaterThan(1);
    expect(crons.jobs.length).toBeGreaterThan(1);
    expect(runs.overlaps).toEqual([]);
    expect(crons.overlaps).toEqual([]);
  });
});
