import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { LockStatus } from '../../src/cli/status-command.js';
import { CONNECT_GRACE_MS } from '../../src/driver/connection.js';
import { distlock, lockHeld, nodesWith, redisArgs } from '../support/cli.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);
const nodes = () => redisArgs(fixture());

describe('distlock status', () => {
  it('shows held or free, the remaining TTL and the fence, per node', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000, fencing: true });
    const held = await distlock(['status', 'report', ...nodes()]).done;
    expect(held.code).toBe(0);
    expect(held.stdout).toMatch(/^report: held \(locked on 3 of 3 node\(s\)\)/);
    expect(held.stdout).toMatch(/held, \d+ ms left, fence 1/);
    await lock.release();
    const free = await distlock(['status', 'report', '--json', ...nodes()]).done;
    expect(JSON.parse(free.stdout)).toMatchObject({ resource: 'report', held: false, heldOn: 0 });
  });

  it('names who holds it: `distlock run` by its host, pid and command, a library lock by its owner', async () => {
    const run = distlock(['run', ...nodes(), 'backup', 'sleep', '30']);
    await lockHeld(fixture(), 'distlock:{backup}');
    const shown = await distlock(['status', 'backup', ...nodes()]).done;
    const owner = `${hostname()}:${run.child.pid} sleep 30`;
    const firstLine = shown.stdout.split('\n')[0] ?? '';
    expect(firstLine).toMatch(new RegExp(`, by ${owner} since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`));
    const json = JSON.parse(
      (await distlock(['status', 'backup', '--json', ...nodes()]).done).stdout,
    );
    expect(json).toMatchObject({ owner, nodes: Array(3).fill(expect.objectContaining({ owner })) });
    // The server's time, off by at most half an INFO round trip, within the connect grace.
    expect(Date.parse(json.since)).toBeLessThanOrEqual(Date.now() + CONNECT_GRACE_MS / 2);
    run.child.kill('SIGTERM');
    await run.done;
    // A value written by hand, with quotes and a terminal escape in its label, is shown
    // escaped, on one line.
    const crafted = `${'A'.repeat(22)}.1700000000000.${encodeURIComponent('job "x" \u001b[2J')}`;
    for (const admin of fixture().admin)
      await admin.set('distlock:{report}', crafted, 'PX', 10_000);
    const quoted = await distlock(['status', 'report', ...nodes()]).done;
    expect(quoted.stdout.split('\n')[0]).toMatch(
      /, by job \\"x\\" \\u001b\[2J since 2023-11-14T22:13:20\.000Z$/,
    );
  });

  it('exits 0 while the lock is held and 1 once it is free, with the state in --json', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000 });
    const held = await distlock(['status', 'report', '--json', ...nodes()]).done;
    expect(held.code).toBe(0);
    expect(JSON.parse(held.stdout)).toMatchObject({ state: 'held', held: true, heldOn: 3 });
    await lock.release();
    const free = await distlock(['status', 'report', '--json', ...nodes()]).done;
    expect(free.code).toBe(1);
    expect(JSON.parse(free.stdout)).toMatchObject({ state: 'free', held: false, heldOn: 0 });
  });

  it('still tells held from free with one node of three down', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000 });
    await fixture().redis.nodes[2]?.kill();
    const held = await distlock(['status', 'report', ...nodes()]).done;
    expect(held.stdout).toMatch(/^report: held \(locked on 2 of 3 node\(s\), 1 unreachable\)/);
    expect(held.code).toBe(0);
    await lock.release();
    const free = await distlock(['status', 'report', ...nodes()]).done;
    expect(free.stdout).toMatch(/^report: free \(locked on 0 of 3 node\(s\), 1 unreachable\)/);
    expect(free.code).toBe(1);
  });

  it.each([
    ['down (connection refused)', 'kill', /ECONNREFUSED/, /is Redis running at/],
    ['paused (no answer)', 'pause', /no answer within 2000 ms/, /did not answer in time/],
  ] as const)(
    'says unknown and exits 69, in seconds, when a majority of nodes is %s, with a hint',
    async (_, fault, cause, hint) => {
      await locker().acquire('report', { ttlMs: 10_000 });
      const [first, second] = fixture().redis.nodes;
      if (!first || !second) throw new Error('the fixture has 3 nodes');
      for (const node of [first, second]) await (fault === 'kill' ? node.kill() : node.pause());
      const startedAt = performance.now();
      const { code, stdout, stderr } = await distlock(['status', 'report', ...nodes()]).done;
      const elapsedMs = performance.now() - startedAt;
      expect(stdout).toMatch(/^report: unknown \(locked on 1 of 3 node\(s\), 2 unreachable\)/);
      for (const node of [first, second]) {
        expect(stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:${node.port}  unreachable: \\S`));
      }
      expect(stdout).toMatch(cause);
      expect(stderr).toMatch(hint);
      expect(stderr).toContain(`127.0.0.1:${first.port}, 127.0.0.1:${second.port}`);
      expect(code).toBe(69);
      expect(elapsedMs).toBeLessThan(15_000); // each node gets 2 s at most, not forever
    },
  );

  it('says a key PERSISTed by hand is held without expiry, never a negative or NaN time', async () => {
    const anonymous = locker({ owner: false }); // lines without a holder's name
    const lock = await anonymous.acquire('report', { ttlMs: 10_000, fencing: true });
    const tick = await anonymous.acquire('schedule:report', { ttlMs: 10_000 }); // a cron tick's
    for (const admin of fixture().admin.slice(0, 2)) {
      expect(await admin.persist('distlock:{report}')).toBe(1);
      expect(await admin.persist('distlock:{schedule:report}')).toBe(1);
    }
    const shown = await distlock(['status', 'report', ...nodes()]).done;
    expect(shown.code).toBe(0);
    const lines = shown.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'report: held (locked on 3 of 3 node(s)), without expiry on a quorum: held until deleted (distlock break)',
    );
    expect(lines.slice(1, 3)).toEqual(
      fixture()
        .redis.nodes.slice(0, 2)
        .map((n) => `  127.0.0.1:${n.port}  held, without expiry, fence 1`),
    );
    expect(lines[3]).toMatch(/^ {2}127\.0\.0\.1:\d+ {2}held, \d+ ms left, fence 1$/);

    const { stdout } = await distlock(['status', 'report', '--json', ...nodes()]).done;
    const found = JSON.parse(stdout) as LockStatus;
    expect(found).toMatchObject({ state: 'held', held: true, heldOn: 3, remainingMs: null });
    expect(found.nodes.map((n) => [n.held, n.remainingMs === null])).toEqual([
      [true, true],
      [true, true],
      [true, false],
    ]);
    expect(found.nodes[2]?.remainingMs).toBeGreaterThan(0);

    const cron = await distlock(['status', '--cron', 'report', ...nodes()]).done;
    expect(cron.stdout.match(/held, without expiry/g)).toHaveLength(2);
    expect(`${shown.stdout}${stdout}${cron.stdout}`).not.toMatch(/-\d+ ms|NaN|Infinity|at most -/);
    await lock.release();
    await tick.release();
  });

  it('reads the lock of lockers with another key prefix (--prefix)', async () => {
    const lock = await locker({ prefix: 'app:' }).acquire('report', { ttlMs: 10_000 });
    const args = ['status', 'report', ...nodes()];
    expect((await distlock([...args, '--prefix', 'app:']).done).code).toBe(0);
    expect((await distlock(args).done).code).toBe(1); // distlock:{report} is free
    await lock.release();
  });

  it("shows the lock of a cron job's running tick with --cron", async () => {
    const cron = distlock([
      'cron',
      '* * * * * *',
      '--key',
      'report',
      '--at-least',
      '0',
      ...nodes(),
      '--',
      'sleep',
      '30',
    ]);
    await lockHeld(fixture(), 'distlock:{schedule:report}');
    const shown = await distlock(['status', '--cron', 'report', ...nodes()]).done;
    // The TTL is --at-most (10 min by default): when the lock ends at the latest, not how
    // long the job runs (before: "held, 599842 ms left").
    const atMost =
      /held until the tick's job ends \(and --at-least has passed\), at most (9 min \d+(\.\d)? s|10 min) more/;
    expect(shown.stdout.split('\n').filter((line) => atMost.test(line))).toHaveLength(3);
    expect(shown.stdout).not.toMatch(/ms left/);
    const tick = await distlock(['status', '--cron', 'report', '--json', ...nodes()]).done;
    expect(tick.code).toBe(0);
    expect(JSON.parse(tick.stdout)).toMatchObject({ resource: 'schedule:report', state: 'held' });
    // The cron job's lock is not the lock that `distlock run report` takes.
    expect((await distlock(['status', 'report', ...nodes()]).done).code).toBe(1);
    cron.child.kill('SIGTERM');
    expect((await cron.done).code).toBe(143);
    const after = await distlock(['status', '--cron', 'report', ...nodes()]).done;
    expect(after.code).toBe(1); // released when the job was stopped (--at-least 0)
  });
});

describe('distlock break', () => {
  it('without --yes only says what it would do (exit 2); with it breaks the lock (0, then 1)', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000 });
    const dryRun = await distlock(['break', 'report', ...nodes()]).done;
    expect(dryRun.code).toBe(2);
    expect(dryRun.stdout).toMatch(/^report: held \(locked on 3 of 3 node\(s\)\)/);
    expect(dryRun.stderr).toMatch(/would delete the lock on "report" from the 3 of 3 node\(s\)/);
    expect(dryRun.stderr).toMatch(/Nothing done: add --yes/);
    expect(await nodesWith(fixture(), 'distlock:{report}')).toBe(3);

    const broken = await distlock(['break', 'report', '--yes', ...nodes()]).done;
    expect(broken.stdout).toMatch(/^report: broken \(deleted on 3 of 3 node\(s\)\)/);
    expect(broken.code).toBe(0);
    expect(await nodesWith(fixture(), 'distlock:{report}')).toBe(0);
    await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST' });

    const again = await distlock(['break', 'report', '--yes', '--json', ...nodes()]).done;
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ resource: 'report', result: 'not-held' });
  });
});
