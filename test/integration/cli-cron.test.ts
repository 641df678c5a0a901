import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  distlock,
  killAll,
  lockHeld,
  longestPttl,
  nodesWith,
  pidWrittenTo,
  printed,
  redisArgs,
  stopsRunning,
  withBackgroundSleep,
} from '../support/cli.js';
import { JobLogWatch, logStart } from '../support/job-log.js';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const nodes = () => redisArgs(fixture());
const dir = mkdtempSync(join(tmpdir(), 'distlock-cron-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Pids that commands under test started; whatever still runs after a test is killed. */
const started: number[] = [];
afterEach(() => killAll(started));

describe('distlock cron', () => {
  it('runs each tick on exactly one of two machines', async () => {
    const file = join(dir, 'ticks');
    const args = [
      'cron',
      '* * * * * *',
      '--key',
      'tick',
      '--at-least',
      '800ms',
      ...nodes(),
      '--',
      'sh',
      '-c',
      `date +%s >> ${file}`,
    ];
    const fleet = [distlock(args), distlock(args)];
    await linesIn(file, 3); // three ticks, however slowly the two started
    for (const member of fleet) member.child.kill('SIGTERM');
    const results = await Promise.all(fleet.map((m) => m.done));
    expect(results.map((r) => r.code)).toEqual([143, 143]); // 128 + SIGTERM
    const ticks = readFileSync(file, 'utf8').trim().split('\n');
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(new Set(ticks).size).toBe(ticks.length);
  });

  it("keeps the job's own options, even those named like distlock's, after --", async () => {
    const file = join(dir, 'job-args');
    const cron = distlock([
      'cron',
      '* * * * * *',
      '--key',
      'own-options',
      ...nodes(),
      '--',
      'sh',
      '-c',
      `printf '%s\\n' "$@" > ${file}.tmp && mv ${file}.tmp ${file}`,
      'sh',
      '--grace',
      '1',
      '--redis',
      'redis://elsewhere',
      '-la',
    ]);
    await linesIn(file, 1);
    cron.child.kill('SIGTERM');
    expect((await cron.done).code).toBe(143);
    expect(readFileSync(file, 'utf8')).toBe('--grace\n1\n--redis\nredis://elsewhere\n-la\n');
  });

  it('on SIGTERM stops the running job and what it started, and exits 143', async () => {
    const file = join(dir, 'cron-grandchild');
    const cron = distlock([
      'cron',
      '* * * * * *',
      '--key',
      'long-job',
      ...nodes(),
      '--',
      'sh',
      '-c',
      withBackgroundSleep(file),
    ]);
    const grandchild = await pidWrittenTo(file, started);
    cron.child.kill('SIGTERM');
    const { code } = await cron.done;
    expect(code).toBe(143);
    expect(await stopsRunning(grandchild)).toBe(true);
  });

  it('reads a bare number as seconds: --at-most 3 locks each tick for 3 s', async () => {
    const cron = distlock([
      'cron',
      '* * * * * *',
      '--key',
      'long-job',
      '--at-most',
      '3',
      '--at-least',
      '1ms', // released when the job ends
      ...nodes(),
      '--',
      'sleep',
      '30',
    ]);
    await lockHeld(fixture(), 'distlock:{schedule:long-job}');
    const pttl = await longestPttl(fixture(), 'distlock:{schedule:long-job}');
    expect(pttl).toBeGreaterThan(1_000);
    expect(pttl).toBeLessThanOrEqual(3_000);
    cron.child.kill('SIGTERM');
    expect((await cron.done).code).toBe(143);
  });

  it('stops a job that runs past --at-most before its lock runs out', async () => {
    const cron = distlock([
      'cron',
      '* * * * * *',
      '--key',
      'overrun',
      '--at-most',
      '500ms',
      '--at-least',
      '1ms',
      ...nodes(),
      '--',
      'sleep',
      '30',
    ]);
    // 500 ms leave no room for --grace (5 s): SIGKILL, 200 ms before the lock can run out.
    await printed(cron, /tick \S+ failed: "sleep" exited with 137/);
    expect(cron.stderr()).toMatch(
      /^distlock: no extension of the command's lease came in time, with \d+ ms left on the lease; sent SIGKILL to process group \d+$/m,
    );
    expect(cron.stderr()).not.toMatch(/lost its lock/);
    cron.child.kill('SIGTERM');
    expect((await cron.done).code).toBe(143);
  });

  it.each([
    [
      '127 for a command that is not found',
      () => join(dir, 'missing'),
      /: command not found \(exit 127\)/,
    ],
    ['126 for a file that is not executable', notExecutable, /: permission denied \(exit 126\)/],
  ])('logs a job that cannot be run (%s) and releases its tick', async (_, file, message) => {
    const cron = distlock([
      'cron',
      '* * * * * *',
      '--key',
      'broken',
      '--at-least',
      '1ms', // released when the job ends
      ...nodes(),
      '--',
      file(),
    ]);
    await printed(cron, message);
    expect(cron.stderr()).toMatch(/^distlock: tick \S+ failed: /);
    expect(await nodesWith(fixture(), 'distlock:{schedule:broken}')).toBe(0);
    cron.child.kill('SIGTERM');
    expect((await cron.done).code).toBe(143);
  });
});

// The instance whose job runs is killed (SIGKILL) or stopped (SIGSTOP) mid-job: its guardian
// stops the job before the tick's lock can run out, so the other instance's next tick never
// starts the job beside it.
// The third case's job SIGSTOPs its distlock as its first act: what distlock had not told the
// guardian by then (a write still queued in its event loop), it would never tell.
describe.each([
  ['SIGKILL', 'SIGKILL', ''],
  ['SIGSTOP', 'SIGSTOP', ''],
  ['SIGSTOP from its job as the job starts', undefined, 'kill -STOP $PPID; '],
] as const)('distlock cron receiving %s mid-job', (name, signal, jobFirst) => {
  it("leaves no job running past its tick's lock: the other instance's next job never overlaps it", async () => {
    const label = name.replaceAll(' ', '-');
    const log = join(dir, `${label}.log`);
    const args = [
      'cron',
      '* * * * * *',
      '--key',
      `report-${label}`,
      '--at-most',
      '2s',
      '--grace',
      '30s',
      ...nodes(),
      '--',
      'sh',
      '-c',
      `${jobFirst}trap '' TERM; ${logStart(log)}; sleep 5`, // runs past --at-most, deaf to SIGTERM
    ];
    const fleet = [distlock(args), distlock(args)];
    const watch = new JobLogWatch(log);
    try {
      const first = await watch.started(1);
      started.push(first.group);
      const runner = fleet.find((member) => member.child.pid === parentOf(first.group));
      if (signal) runner?.child.kill(signal);
      const signalledAt = signal ? performance.now() : first.startedAt;
      const second = await watch.started(2);
      started.push(second.group);
      watch.stop();
      console.log(
        `cron ${name}: first job's group gone ${((first.endedAt ?? Number.NaN) - signalledAt).toFixed(0)} ms after the signal, next job started after ${(second.startedAt - signalledAt).toFixed(0)} ms`,
      );
      expect(runner).toBeDefined();
      expect(watch.overlaps).toEqual([]);
      expect((first.endedAt ?? Number.POSITIVE_INFINITY) - signalledAt).toBeLessThan(2_000);
    } finally {
      watch.stop();
      for (const member of fleet) {
        member.child.kill('SIGCONT');
        member.child.kill('SIGKILL');
      }
    }
  });
});

/** The parent of process `pid`. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Resolves once `file` has at least `count` lines. */
async function linesIn(file: string, count: number, withinMs = 15_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  const lines = () => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').length - 1 : 0);
  while (lines() < count) {
    if (performance.now() > deadline)
      throw new Error(`${file}: not ${count} lines in ${withinMs} ms`);
    await delay(50);
  }
}

/** A file with a shell script in it, but not executable. */
function notExecutable(): string {
  const file = join(dir, 'not-executable.sh');
  writeFileSync(file, '#!/bin/sh\necho ran\n');
  chmodSync(file, 0o644);
  return file;
}
