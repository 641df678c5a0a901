import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  distlock,
  killAll,
  pidWrittenTo,
  printed,
  type Run,
  redisArgs,
  watchKey,
} from '../support/cli.js';
import { isRunning } from '../support/processes.js';
import { type RedisFixture, useRedis } from '../support/redis.js';

// The command's group after the command: a child of the command that ignores SIGTERM outlives
// it. The lock must be released only once the whole group is gone (SIGKILL after --grace),
// after a forwarded signal and after a loss alike, under `run` and under `cron`.
const fixture = useRedis(1);
const dir = mkdtempSync(join(tmpdir(), 'distlock-group-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const started: number[] = [];
afterEach(() => killAll(started));

const GRACE_MS = 1_000;

/** A command (under `sh -c`) whose child ignores SIGTERM and writes its pid to `pidFile`. */
function commandWithDeafChild(pidFile: string): string {
  const child = join(dir, 'deaf-child.sh');
  writeFileSync(child, `trap '' TERM\necho $$ > "$1"\nexec sleep 30\n`);
  return `sh ${child} ${pidFile} & wait`;
}

/**
 * Samples, until `child` is gone, whether `key` exists: the key read first, then the child,
 * so that a gone key and a running child in one sample ran at once. Resolves the instants
 * (performance.now()) the child was last seen running, and of each sample with no key.
 */
async function watchChild(
  redis: RedisFixture,
  key: string,
  child: number,
): Promise<{ goneAt: number; unlockedWhileRunning: number }> {
  let unlockedWhileRunning = 0;
  const deadline = performance.now() + 10_000;
  for (;;) {
    const held = (await redis.admin[0]?.exists(key)) === 1;
    if (!isRunning(child)) return { goneAt: performance.now(), unlockedWhileRunning };
    if (performance.now() > deadline) throw new Error(`the child ${child} still runs after 10 s`);
    if (!held) unlockedWhileRunning++;
    await delay(5);
  }
}

const run = (pidFile: string, ttl: string) =>
  distlock([
    'run',
    '--key',
    'job',
    '--ttl',
    ttl,
    '--grace',
    `${GRACE_MS}ms`,
    ...redisArgs(fixture()),
    '--',
    'sh',
    '-c',
    commandWithDeafChild(pidFile),
  ]);

const cron = (pidFile: string, atMost: string) =>
  distlock([
    'cron',
    '* * * * * *',
    '--key',
    'job',
    '--at-most',
    atMost,
    '--at-least',
    '1ms', // released as soon as the job's group is gone
    '--grace',
    `${GRACE_MS}ms`,
    ...redisArgs(fixture()),
    '--',
    'sh',
    '-c',
    commandWithDeafChild(pidFile),
  ]);

/** Sends SIGTERM to `distlock`; checks the child outlives it until SIGKILL after --grace. */
async function forwardedSignal(distlockRun: Run, pidFile: string, key: string) {
  const child = await pidWrittenTo(pidFile, started);
  distlockRun.child.kill('SIGTERM');
  const signalledAt = performance.now();
  const { goneAt, unlockedWhileRunning } = await watchChild(fixture(), key, child);
  expect(unlockedWhileRunning).toBe(0);
  expect(goneAt - signalledAt).toBeGreaterThanOrEqual(GRACE_MS * 0.9); // deaf to SIGTERM
  expect((await distlockRun.done).code).toBe(143);
  expect(await fixture().admin[0]?.exists(key)).toBe(0);
}

describe('distlock run: a child of the command that ignores SIGTERM', () => {
  it('after a forwarded signal, gets SIGKILL after --grace, and only then is the lock released', async () => {
    const pidFile = join(dir, 'run-signal.pid');
    await forwardedSignal(run(pidFile, '10s'), pidFile, 'distlock:{job}');
  });

  it('after a lock loss, gets SIGKILL after --grace, and only then does distlock exit (76)', async () => {
    const pidFile = join(dir, 'run-loss.pid');
    const first = run(pidFile, '4s');
    const child = await pidWrittenTo(pidFile, started);
    await fixture().admin[0]?.set('distlock:{job}', 'another holder', 'PX', 60_000);
    await printed(first, /lock on "job" lost; stopping the command/);
    const lostAt = performance.now();
    const exited = first.done.then(() => performance.now());
    const { goneAt } = await watchChild(fixture(), 'distlock:{job}', child);
    expect(goneAt - lostAt).toBeGreaterThanOrEqual(GRACE_MS * 0.9);
    expect(await exited).toBeGreaterThanOrEqual(goneAt - 10);
    expect((await first.done).code).toBe(76);
  });
});

describe('distlock cron: a child of the job that ignores SIGTERM', () => {
  it("after a forwarded signal, gets SIGKILL after --grace, and only then is the tick's lock released", async () => {
    const pidFile = join(dir, 'cron-signal.pid');
    await forwardedSignal(cron(pidFile, '10s'), pidFile, 'distlock:{schedule:job}');
  });

  it("in a job that runs past --at-most, is gone before the tick's lock runs out", async () => {
    const pidFile = join(dir, 'cron-overrun.pid');
    const key = 'distlock:{schedule:job}';
    const watching = await watchKey(fixture(), key);
    const job = cron(pidFile, '3s');
    await watching();
    const child = await pidWrittenTo(pidFile, started);
    const { unlockedWhileRunning } = await watchChild(fixture(), key, child);
    expect(unlockedWhileRunning).toBe(0);
    job.child.kill('SIGTERM');
    expect((await job.done).code).toBe(143);
  });
});
