import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { useLockers, useRedis } from '../support/redis.js';

/** Runs the built command (`npm test` builds first), as users run it. */
const CLI = 'dist/esm/cli/main.js';
const fixture = useRedis(3);
const locker = useLockers(fixture);
const dir = mkdtempSync(join(tmpdir(), 'distlock-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  readonly child: ChildProcess;
  readonly done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function distlock(args: readonly string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

const redisArgs = () => fixture().redis.urls.flatMap((url) => ['--redis', url]);

describe('distlock run', () => {
  it("passes the command's output and exit code through", async () => {
    const { code, stdout } = await distlock([
      'run',
      '--key',
      'job',
      ...redisArgs(),
      '--',
      'sh',
      '-c',
      'echo hello; exit 3',
    ]).done;
    expect(stdout).toBe('hello\n');
    expect(code).toBe(3);
  });

  it('exits 75 without running the command when the lock is busy and --no-wait', async () => {
    const held = await locker().acquire('job', { ttlMs: 10_000 });
    const marker = join(dir, 'ran');
    const { code, stderr } = await distlock([
      'run',
      '--key',
      'job',
      '--no-wait',
      ...redisArgs(),
      '--',
      'touch',
      marker,
    ]).done;
    expect(code).toBe(75);
    expect(stderr).toMatch(/locked by another holder/);
    expect(() => readFileSync(marker)).toThrow();
    await held.release();
  });

  it('takes the Redis nodes from DISTLOCK_REDIS', async () => {
    const env = { DISTLOCK_REDIS: fixture().redis.urls.join(',') };
    const held = await locker().acquire('env-job', { ttlMs: 10_000 });
    const { code } = await distlock(['run', '--key', 'env-job', '--no-wait', '--', 'true'], env)
      .done;
    expect(code).toBe(75);
    await held.release();
  });

  it('stops the command and exits 76 when the lock is lost', async () => {
    const run = distlock([
      'run',
      '--key',
      'job',
      '--ttl',
      '600ms',
      '--grace',
      '1s',
      ...redisArgs(),
      '--',
      'sleep',
      '30',
    ]);
    await delay(300);
    const started = performance.now();
    await Promise.all(
      fixture()
        .redis.nodes.slice(0, 2)
        .map((node) => node.kill()),
    );
    const { code, stderr } = await run.done;
    expect(code).toBe(76);
    expect(stderr).toMatch(/lost; stopping the command/);
    expect(performance.now() - started).toBeLessThan(2_000); // not the 30 s of sleep
  });

  it('forwards SIGTERM to the command', async () => {
    const script =
      "process.on('SIGTERM', () => { console.log('got TERM'); process.exit(7); }); setInterval(() => {}, 1000); console.log('ready');";
    const run = distlock([
      'run',
      '--key',
      'job',
      ...redisArgs(),
      '--',
      process.execPath,
      '-e',
      script,
    ]);
    await new Promise<void>((resolve) =>
      run.child.stdout?.on('data', (c: Buffer) => c.toString().includes('ready') && resolve()),
    );
    run.child.kill('SIGTERM');
    const { code, stdout } = await run.done;
    expect(stdout).toContain('got TERM');
    expect(code).toBe(7);
  });

  it.each([
    [['run', '--', 'true'], /required option '--key <key>'/],
    [['run', '--key', 'k', '--ttl', '3x', '--', 'true'], /invalid duration "3x"/],
    [['run', '--key', 'k', '--ttl', '1ms', '--', 'true'], /`ttlMs`/],
    [['frobnicate'], /unknown command/],
  ])('exits 2 with a one-line error and the usage for %j', async (args, message) => {
    const { code, stderr } = await distlock([...args, ...(args[0] === 'frobnicate' ? [] : [])])
      .done;
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toMatch(/Usage: distlock/);
  });
});

describe('distlock status', () => {
  it('shows held or free, the remaining TTL and the fence, per node', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000, fencing: true });
    const held = await distlock(['status', 'report', ...redisArgs()]).done;
    expect(held.code).toBe(0);
    expect(held.stdout).toMatch(/^report: held \(locked on 3 of 3 node\(s\)\)/);
    expect(held.stdout).toMatch(/held, \d+ ms left, fence 1/);
    await lock.release();
    const free = await distlock(['status', 'report', '--json', ...redisArgs()]).done;
    expect(JSON.parse(free.stdout)).toMatchObject({ resource: 'report', held: false, heldOn: 0 });
  });
});

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
      ...redisArgs(),
      '--',
      'sh',
      '-c',
      `date +%s >> ${file}`,
    ];
    const fleet = [distlock(args), distlock(args)];
    await delay(3_600);
    for (const member of fleet) member.child.kill('SIGTERM');
    const results = await Promise.all(fleet.map((m) => m.done));
    expect(results.map((r) => r.code)).toEqual([0, 0]);
    const ticks = readFileSync(file, 'utf8').trim().split('\n');
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ticks).size).toBe(ticks.length);
  });
});
