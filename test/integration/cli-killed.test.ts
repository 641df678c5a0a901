import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { groupRunning } from '../../src/cli/process-group.js';
import {
  distlock,
  killAll,
  pidWrittenTo,
  printed,
  redisArgs,
  stopsRunning,
  watchKey,
} from '../support/cli.js';
import { JobLogWatch, logStart } from '../support/job-log.js';
import { isRunning } from '../support/processes.js';
import { useRedis } from '../support/redis.js';
import { NODE, OTHER_RUNTIMES, type Runtime } from '../support/runtimes.js';

// `distlock run` killed outright (SIGKILL: the OOM killer, `kill -9`): nothing extends the
// lease any more, so the command it ran must be gone before the lease runs out, or the next
// holder's command runs beside it. Its guardian process sees to that.
const fixture = useRedis(1);
const dir = mkdtempSync(join(tmpdir(), 'distlock-killed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Pids that commands under test started; whatever still runs after a test is killed. */
const started: number[] = [];
afterEach(() => killAll(started));

const TTL_MS = 1_000;

/** `distlock run` of the job "job" on a `TTL_MS` lease, its command under `sh -c`. */
const run = (script: string, ...flags: string[]) => runUnder(NODE, script, ...flags);

/** {@link run} under `runtime` (a later `--ttl` in `flags` wins). */
const runUnder = (runtime: Runtime, script: string, ...flags: string[]) =>
  distlock(
    [
      'run',
      '--key',
      'job',
      '--ttl',
      `${TTL_MS}ms`,
      ...flags,
      ...redisArgs(fixture()),
      '--',
      'sh',
      '-c',
      script,
    ],
    {},
    runtime,
  );

/**
 * Resolves once the lease is extended (the next command on its key), proof that distlock
 * has named its running command to the guardian: it does so as soon as it starts it.
 */
const extended = async () => (await watchKey(fixture(), 'distlock:{job}'))();

const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');

/** The guardian that the running `distlock` with pid `parent` started. */
async function guardianOf(parent: number, withinMs = 10_000): Promise<number> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
      let stat: string;
      let args: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        args = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      } catch {
        continue; // exited meanwhile
      }
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && args.includes('guardian-process.js')) return Number(entry);
    }
    await delay(10);
  }
  throw new Error(`no guardian of distlock ${parent} after ${withinMs} ms`);
}

describe('distlock run killed with SIGKILL', () => {
  it("stops the command's group before the lease runs out: the next run never overlaps", async () => {
    const log = join(dir, 'overlap.log');
    const pidFile = join(dir, 'overlap.pid');
    // The command ignores SIGTERM (`sleep` inherits that), and --grace is longer than the
    // lease: only a SIGKILL sent before the lease runs out keeps the two runs apart.
    const first = run(
      `trap '' TERM; echo $$ > ${pidFile}; echo start A >> ${log}; sleep 3; echo end A >> ${log}`,
      '--grace',
      '30s',
    );
    const group = await pidWrittenTo(pidFile, started); // sh leads the command's group
    await extended();
    expect(read(log)).toBe('start A\n');

    first.child.kill('SIGKILL');
    const killedAt = performance.now();
    const second = run(`echo start B >> ${log}; sleep 0.5; echo end B >> ${log}`, '--wait', '10s');

    // The log is read before the group is looked at: "start B" read while a member of the
    // first command's group still runs is an overlap, however short.
    let goneAfterMs: number | undefined;
    let secondAfterMs: number | undefined;
    let overlap = false;
    while (secondAfterMs === undefined) {
      const text = read(log);
      const running = groupRunning(group);
      const now = performance.now() - killedAt;
      if (!running) goneAfterMs ??= now;
      if (text.includes('start B')) {
        secondAfterMs = now;
        overlap = running;
      }
      await delay(5);
    }
    const { code } = await second.done;
    await delay(3_000); // long enough for A's `sleep 3` to end, had A survived
    const lines = read(log).trim().split('\n');
    console.log(
      `A's group gone ${goneAfterMs?.toFixed(0)} ms after the kill, B started after ` +
        `${secondAfterMs.toFixed(0)} ms; log: ${lines.join(' | ')}\n${first.stderr()}`,
    );

    expect(code).toBe(0);
    expect(overlap).toBe(false);
    expect(lines).toEqual(['start A', 'start B', 'end B']);
    // The lease that the killed distlock held had at most its TTL left.
    expect(goneAfterMs).toBeLessThan(TTL_MS);
    expect(first.stderr()).toMatch(
      /ended while its command ran, with \d+ ms left on the lease; sent SIGTERM to process group \d+, SIGKILL in \d+ ms/,
    );
  });

  it('stops the command alone with --foreground', async () => {
    const pidFile = join(dir, 'foreground.pid');
    const first = run(`echo $$ > ${pidFile}; exec sleep 30`, '--foreground');
    const pid = await pidWrittenTo(pidFile, started);
    await extended();
    first.child.kill('SIGKILL');
    expect(await stopsRunning(pid, TTL_MS)).toBe(true);
    await printed(first, new RegExp(`sent SIGTERM to process ${pid}\\b`));
  });
});

describe("distlock run's guardian", () => {
  it('when killed, makes distlock stop the command, which nothing would stop otherwise', async () => {
    const pidFile = join(dir, 'no-guardian.pid');
    const first = run(`echo $$ > ${pidFile}; exec sleep 30`);
    await pidWrittenTo(pidFile, started);
    process.kill(await guardianOf(first.child.pid ?? 0), 'SIGKILL');
    const { code, stderr } = await first.done;
    expect(code).toBe(143); // the command, stopped by SIGTERM
    expect(stderr).toMatch(/the guardian of the command ended \(SIGKILL\); stopping the command/);
  });

  it('exits after a command that simply ended, leaving what it left running', async () => {
    const [background, shell] = [join(dir, 'left-running'), join(dir, 'left-running-shell')];
    const first = run(`sleep 30 & echo $! > ${background}; echo $$ > ${shell}; sleep 0.2`);
    await pidWrittenTo(shell, started);
    const guardian = await guardianOf(first.child.pid ?? 0);
    const sleep = await pidWrittenTo(background, started);
    expect((await first.done).code).toBe(0);
    expect(await stopsRunning(guardian)).toBe(true);
    await delay(TTL_MS); // a guardian that took distlock's exit for its death acts at once
    expect(isRunning(sleep)).toBe(true);
  });
});

describe.each(OTHER_RUNTIMES)('distlock run under $name', (runtime) => {
  it('passes on the exit code of its command, and releases the lock', async () => {
    const { code } = await runUnder(runtime, 'exit 3').done;
    expect(code).toBe(3);
    expect(await fixture().admin[0]?.exists('distlock:{job}')).toBe(0);
  });

  it("killed with SIGKILL, its guardian stops the command's group before the lease runs out", async () => {
    const pidFile = join(dir, `${runtime.name}.pid`);
    const first = runUnder(runtime, `echo $$ > ${pidFile}; exec sleep 30`);
    const group = await pidWrittenTo(pidFile, started);
    await extended();
    first.child.kill('SIGKILL');
    const killedAt = performance.now();
    while (groupRunning(group) && performance.now() - killedAt < TTL_MS) await delay(5);
    expect(groupRunning(group)).toBe(false);
    // The guardian logs right after its signal: the line may reach us after the group is gone.
    await printed(
      first,
      new RegExp(`ended while its command ran, .* sent SIGTERM to process group ${group}\\b`),
    );
  });
});

/** A command that logs its start to `log`, ignores SIGTERM, and runs for 30 s. */
const stubborn = (log: string) => `trap '' TERM; ${logStart(log)}; sleep 30`;

/**
 * Runs `run -n` of a short job logging to `log` until one gets the lock, within `withinMs`:
 * the next holder, as soon as the lock is free.
 */
async function nextHolder(runtime: Runtime, log: string, withinMs: number): Promise<number> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const { code } = await runUnder(runtime, `${logStart(log)}; sleep 0.2`, '-n').done;
    if (code === 0 || performance.now() > deadline) return code ?? -1;
    await delay(50);
  }
}

// distlock alive but not running (SIGSTOP: a debugger, a cgroup freezer; or starved), or a
// guardian that reads distlock's word late: the guardian acts on the lease's end, an instant
// on a clock both share, not on distlock's death, nor on when it reads.
describe.each([NODE, ...OTHER_RUNTIMES])("distlock run's guardian under $name", (runtime) => {
  it('stops the command of a SIGSTOPped distlock before the lease runs out: a second run -n never overlaps it', async () => {
    const ttlMs = 3_000;
    const log = join(dir, `stopped-${runtime.name}.log`);
    const watch = new JobLogWatch(log);
    const first = runUnder(runtime, stubborn(log), '--ttl', '3s', '--grace', '30s');
    try {
      const job = await watch.started(1);
      started.push(job.group);
      first.child.kill('SIGSTOP');
      const stoppedAt = performance.now();
      expect(await nextHolder(runtime, log, 4 * ttlMs)).toBe(0);
      watch.stop();
      console.log(
        `${runtime.name}: A's group gone ${((job.endedAt ?? Number.NaN) - stoppedAt).toFixed(0)} ms after SIGSTOP, ` +
          `B started after ${((watch.jobs[1]?.startedAt ?? Number.NaN) - stoppedAt).toFixed(0)} ms`,
      );
      expect(watch.overlaps).toEqual([]);
      // The lease had at most its TTL left when distlock stopped.
      expect((job.endedAt ?? Number.POSITIVE_INFINITY) - stoppedAt).toBeLessThan(ttlMs);
    } finally {
      watch.stop();
      first.child.kill('SIGCONT');
    }
    expect((await first.done).code).toBe(76); // it finds the lock lost once it runs again
    expect(first.stderr()).toMatch(
      /no extension of the command's lease came in time, with \d+ ms left on the lease; sent SIGTERM to process group \d+, SIGKILL in \d+ ms/,
    );
  });

  it('stops a command that stops distlock the moment it starts: the guardian knows it before it runs', async () => {
    const ttlMs = 3_000;
    const log = join(dir, `self-stopped-${runtime.name}.log`);
    const watch = new JobLogWatch(log);
    // The command's first act SIGSTOPs distlock, its parent: what distlock had not told the
    // guardian by then (a write still queued in its event loop), it never tells.
    const script = `kill -STOP $PPID; ${stubborn(log)}`;
    const first = runUnder(runtime, script, '--ttl', '3s', '--grace', '30s');
    try {
      const job = await watch.started(1);
      started.push(job.group);
      expect(await nextHolder(runtime, log, 4 * ttlMs)).toBe(0);
      watch.stop();
      expect(watch.overlaps).toEqual([]);
      // distlock stopped before the job logged its start, with at most its TTL left.
      expect((job.endedAt ?? Number.POSITIVE_INFINITY) - job.startedAt).toBeLessThan(ttlMs);
    } finally {
      watch.stop();
      first.child.kill('SIGCONT');
    }
    expect((await first.done).code).toBe(76); // it finds the lock lost once it runs again
  });

  it('told of each extension, lets the command run while distlock extends, and stops it once distlock stops', async () => {
    const log = join(dir, `extended-${runtime.name}.log`);
    const watch = new JobLogWatch(log);
    const first = runUnder(runtime, `${logStart(log)}; sleep 30`);
    try {
      const job = await watch.started(1);
      started.push(job.group);
      // Without word of each extension, the guardian would stop the command three quarters
      // into the first lease: 3 leases later it must still run.
      for (let extension = 0; extension < 6; extension++) await extended();
      expect(job.endedAt, first.stderr()).toBeUndefined();
      await extended();
      first.child.kill('SIGSTOP');
      const stoppedAt = performance.now();
      while (job.endedAt === undefined && performance.now() - stoppedAt < 2 * TTL_MS) {
        await delay(5);
      }
      expect((job.endedAt ?? Number.POSITIVE_INFINITY) - stoppedAt).toBeLessThan(TTL_MS);
    } finally {
      watch.stop();
      first.child.kill('SIGCONT');
    }
    // The command's SIGTERM (143), or the lock found lost if the lease ran out first (76).
    expect([143, 76]).toContain((await first.done).code);
  });

  it('that reads late acts at once: a guardian stopped 1.2 s over an extension and a SIGKILL of distlock', async () => {
    const ttlMs = 2_000;
    const log = join(dir, `late-${runtime.name}.log`);
    const watch = new JobLogWatch(log);
    const first = runUnder(runtime, stubborn(log), '--ttl', '2s', '--grace', '30s');
    const job = await watch.started(1);
    started.push(job.group);
    const guardian = await guardianOf(first.child.pid ?? 0);
    process.kill(guardian, 'SIGSTOP');
    try {
      await extended(); // told to the guardian while it cannot read
      await delay(50);
      first.child.kill('SIGKILL');
      const killedAt = performance.now();
      const second = nextHolder(runtime, log, 4 * ttlMs);
      await delay(1_200);
      process.kill(guardian, 'SIGCONT');
      expect(await second).toBe(0);
      watch.stop();
      console.log(
        `${runtime.name}: A's group gone ${((job.endedAt ?? Number.NaN) - killedAt).toFixed(0)} ms after the kill, ` +
          `B started after ${((watch.jobs[1]?.startedAt ?? Number.NaN) - killedAt).toFixed(0)} ms; ${first.stderr()}`,
      );
      expect(watch.overlaps).toEqual([]);
      expect((job.endedAt ?? Number.POSITIVE_INFINITY) - killedAt).toBeLessThan(ttlMs);
    } finally {
      watch.stop();
      if (isRunning(guardian)) process.kill(guardian, 'SIGCONT');
    }
  });
});
