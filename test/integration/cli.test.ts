import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { isRunning } from '../support/processes.js';
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

/** `distlock run` on a short, auto-extended lease, for tests that then lose the lock. */
const runUntilLost = (...command: string[]) =>
  distlock([
    'run',
    '--key',
    'job',
    '--ttl',
    '600ms',
    '--grace',
    '1s',
    ...redisArgs(),
    '--',
    ...command,
  ]);

/** A shell script that starts `sleep 30` in the background, writes its pid to `file`, waits. */
const withBackgroundSleep = (file: string) => `sleep 30 & echo $! > ${file}; wait`;

/** Pids that commands under test started; whatever still runs after a test is killed. */
const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
});

/** The pid a command wrote to `file`, once it is there in full. */
/** Resolves once `key` exists on the first node: the command's lock is held. */
async function lockHeld(key: string, withinMs = 10_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  while ((await fixture().admin[0]?.exists(key)) !== 1) {
    if (performance.now() > deadline) throw new Error(`${key} not locked after ${withinMs} ms`);
    await delay(20);
  }
}

async function pidWrittenTo(file: string, withinMs = 10_000): Promise<number> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (/^\d+\n$/.test(text)) {
      started.push(Number(text));
      return Number(text);
    }
    if (performance.now() > deadline) throw new Error(`no pid in ${file} after ${withinMs} ms`);
    await delay(20);
  }
}

/** Whether `pid` stops running within `withinMs`. */
async function stopsRunning(pid: number, withinMs = 2_000): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  while (isRunning(pid)) {
    if (performance.now() > deadline) return false;
    await delay(20);
  }
  return true;
}

/** This process's process group (Linux: the 5th field of /proc/self/stat). */
function ownProcessGroup(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

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
    const run = runUntilLost('sleep', '30');
    await lockHeld('distlock:{job}'); // (a fixed delay lost the race on a loaded machine)
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

  it('stops what the command started, too, when the lock is lost', async () => {
    const file = join(dir, 'lost-grandchild');
    const run = runUntilLost('sh', '-c', withBackgroundSleep(file));
    const grandchild = await pidWrittenTo(file);
    await Promise.all(
      fixture()
        .redis.nodes.slice(0, 2)
        .map((node) => node.kill()),
    );
    const { code } = await run.done;
    expect(code).toBe(76);
    expect(await stopsRunning(grandchild)).toBe(true);
  });

  it('forwards SIGTERM to what the command started, too', async () => {
    const file = join(dir, 'term-grandchild');
    const run = distlock([
      'run',
      '--key',
      'job',
      ...redisArgs(),
      '--',
      'sh',
      '-c',
      withBackgroundSleep(file),
    ]);
    const grandchild = await pidWrittenTo(file);
    run.child.kill('SIGTERM');
    const { code } = await run.done;
    expect(code).toBe(143); // sh, ended by the forwarded SIGTERM
    expect(await stopsRunning(grandchild)).toBe(true);
  });

  it.each([
    ['its own process group', [], 'command'],
    ["distlock's process group with --foreground", ['--foreground'], 'distlock'],
  ] as const)('runs the command in %s', async (_, flags, leader) => {
    const { code, stdout } = await distlock([
      'run',
      '--key',
      'job',
      ...flags,
      ...redisArgs(),
      '--',
      'sh',
      '-c',
      'echo $$; cut -d " " -f 5 /proc/$$/stat',
    ]).done;
    expect(code).toBe(0);
    const [pid, group] = stdout.trim().split('\n').map(Number);
    // distlock itself runs in the process group of this test's process.
    expect(group).toBe(leader === 'command' ? pid : ownProcessGroup());
  });

  it.each([
    [['run', '--', 'true'], /required option '--key <key>'/],
    [['run', '--key', 'k', '--ttl', '3x', '--', 'true'], /invalid duration "3x"/],
    [['run', '--key', 'k', '--ttl', '1ms', '--', 'true'], /`ttlMs`/],
    // A grace a timer cannot hold would fire SIGKILL after 1 ms.
    [['run', '--key', 'k', '--grace', '600h', '--', 'true'], /"600h" is too long/],
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

  it('exits 0 while the lock is held and 1 once it is free, with the state in --json', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000 });
    const held = await distlock(['status', 'report', '--json', ...redisArgs()]).done;
    expect(held.code).toBe(0);
    expect(JSON.parse(held.stdout)).toMatchObject({ state: 'held', held: true, heldOn: 3 });
    await lock.release();
    const free = await distlock(['status', 'report', '--json', ...redisArgs()]).done;
    expect(free.code).toBe(1);
    expect(JSON.parse(free.stdout)).toMatchObject({ state: 'free', held: false, heldOn: 0 });
  });

  it('still tells held from free with one node of three down', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000 });
    await fixture().redis.nodes[2]?.kill();
    const held = await distlock(['status', 'report', ...redisArgs()]).done;
    expect(held.stdout).toMatch(/^report: held \(locked on 2 of 3 node\(s\), 1 unreachable\)/);
    expect(held.code).toBe(0);
    await lock.release();
    const free = await distlock(['status', 'report', ...redisArgs()]).done;
    expect(free.stdout).toMatch(/^report: free \(locked on 0 of 3 node\(s\), 1 unreachable\)/);
    expect(free.code).toBe(1);
  });

  it.each([
    ['down (connection refused)', 'kill'],
    ['paused (no answer)', 'pause'],
  ] as const)(
    'says unknown and exits 69, in seconds, when a majority of nodes is %s',
    async (_, fault) => {
      await locker().acquire('report', { ttlMs: 10_000 });
      const [first, second] = fixture().redis.nodes;
      if (!first || !second) throw new Error('the fixture has 3 nodes');
      for (const node of [first, second]) await (fault === 'kill' ? node.kill() : node.pause());
      const startedAt = performance.now();
      const { code, stdout } = await distlock(['status', 'report', ...redisArgs()]).done;
      const elapsedMs = performance.now() - startedAt;
      expect(stdout).toMatch(/^report: unknown \(locked on 1 of 3 node\(s\), 2 unreachable\)/);
      for (const node of [first, second]) {
        expect(stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:${node.port}  unreachable: \\S`));
      }
      expect(code).toBe(69);
      expect(elapsedMs).toBeLessThan(6_000); // each node gets 2 s at most
    },
  );

  it('reads the lock of lockers with another key prefix (--prefix)', async () => {
    const lock = await locker({ prefix: 'app:' }).acquire('report', { ttlMs: 10_000 });
    const args = ['status', 'report', ...redisArgs()];
    expect((await distlock([...args, '--prefix', 'app:']).done).code).toBe(0);
    expect((await distlock(args).done).code).toBe(1); // distlock:{report} is free
    await lock.release();
  });

  it('exits 2 naming a node URL that is not redis://', async () => {
    const { code, stderr } = await distlock(['status', 'report', '--redis', 'http://x']).done;
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /`nodes\[0\]` to be a redis:\/\/ or rediss:\/\/ URL, got `"http:\/\/x"`/,
    );
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
    expect(results.map((r) => r.code)).toEqual([143, 143]); // 128 + SIGTERM
    const ticks = readFileSync(file, 'utf8').trim().split('\n');
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    expect(new Set(ticks).size).toBe(ticks.length);
  });

  it('on SIGTERM stops the running job and what it started, and exits 143', async () => {
    const file = join(dir, 'cron-grandchild');
    const cron = distlock([
      'cron',
      '* * * * * *',
      '--key',
      'long-job',
      ...redisArgs(),
      '--',
      'sh',
      '-c',
      withBackgroundSleep(file),
    ]);
    const grandchild = await pidWrittenTo(file);
    cron.child.kill('SIGTERM');
    const { code } = await cron.done;
    expect(code).toBe(143);
    expect(await stopsRunning(grandchild)).toBe(true);
  });
});
