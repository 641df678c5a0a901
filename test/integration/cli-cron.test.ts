import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  distlock,
  killAll,
  lockHeld,
  nodesWith,
  pidWrittenTo,
  printed,
  redisArgs,
  stopsRunning,
  withBackgroundSleep,
} from '../support/cli.js';
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
    const pttl = (await fixture().admin[0]?.pttl('distlock:{schedule:long-job}')) ?? 0;
    expect(pttl).toBeGreaterThan(1_000);
    expect(pttl).toBeLessThanOrEqual(3_000);
    cron.child.kill('SIGTERM');
    expect((await cron.done).code).toBe(143);
  });

  it('stops a job that runs past --at-most, and logs its tick as lost', async () => {
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
    await printed(cron, /lost its lock/);
    expect(cron.stderr()).toMatch(
      /^distlock: tick \S+ lost its lock: Lock on "schedule:overrun" lost: its validity ran out/m,
    );
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
