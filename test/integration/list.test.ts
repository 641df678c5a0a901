import { spawnSync } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { ListedJson } from '../../src/cli/list-command.js';
import {
  InvalidArgumentError,
  type ListedResource,
  type Locker,
  NoQuorumError,
} from '../../src/index.js';
import { CLI, distlock, redisArgs } from '../support/cli.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);
const nodes = () => redisArgs(fixture());

async function listed(from: Locker, match?: string): Promise<ListedResource[]> {
  const found: ListedResource[] = [];
  for await (const item of from.list(match === undefined ? {} : { match })) found.push(item);
  return found;
}

describe('locker.list and distlock ls', () => {
  it('list every kind that is held or waited for, with owners, time left, fences and waiters', async () => {
    const a = locker({ owner: 'worker-a' });
    const lock = await a.acquire('report:1', { ttlMs: 10_000, fencing: true });
    const waiting = locker({ owner: 'worker-b' }).acquire('report:1', {
      ttlMs: 10_000,
      waitMs: 20_000,
    });
    const permits = a.semaphore('exports', { permits: 3 });
    const held = [
      await permits.acquire({ ttlMs: 10_000 }),
      await permits.acquire({ ttlMs: 10_000 }),
    ];
    const read = await a.readWriteLock('doc').read.acquire({ ttlMs: 10_000 });
    const written = await a.readWriteLock('doc-2').write.acquire({ ttlMs: 10_000 });
    const leading = await a.election('scheduler', { leaseMs: 10_000 }).campaign('worker-a, node 7');
    const tick = await a.acquire('schedule:nightly', { ttlMs: 10_000 }); // a schedule() tick's lock
    await (await a.acquire('released', { ttlMs: 10_000, fencing: true })).release(); // a fence only
    while ((await a.inspect('report:1')).waiters === 0) await delay(10);

    const found = await listed(locker());
    const view = found.map((r) => [r.kind, r.name, r.holders, r.owners, r.waiters]);
    expect(view).toEqual([
      ['read-write', 'doc', 1, ['worker-a'], 0],
      ['read-write', 'doc-2', 1, ['worker-a'], 0],
      ['semaphore', 'exports', 2, ['worker-a', 'worker-a'], 0],
      ['tick', 'nightly', 1, ['worker-a'], 0],
      ['lock', 'report:1', 1, ['worker-a'], 1],
      ['election', 'scheduler', 1, ['worker-a'], 0],
    ]);
    const byName = new Map(found.map((r) => [r.name, r]));
    expect(byName.get('report:1')).toMatchObject({ held: true, fence: 1n, unreachable: [] });
    expect(byName.get('exports')?.size).toBe(3); // as the permits' labels say
    expect(byName.get('doc-2')?.writer).toBe(true);
    expect(byName.get('doc')?.writer).toBe(false);
    expect(byName.get('scheduler')).toMatchObject({ leader: 'worker-a, node 7', fence: 1n });
    for (const r of found) {
      expect(r.remainingMs).toBeGreaterThan(0);
      expect(r.remainingMs).toBeLessThanOrEqual(10_000);
    }
    expect((await listed(locker(), 'report:*')).map((r) => r.name)).toEqual(['report:1']);
    expect((await listed(locker(), 'doc?2')).map((r) => r.name)).toEqual(['doc-2']);

    // The command: one line per resource, and JSON lines.
    const text = await distlock(['ls', ...nodes()]).done;
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(7);
    expect(lines[1]).toMatch(/^read-write doc-2 +written by worker-a since \S+Z, \d+ ms left$/);
    expect(lines[2]).toMatch(
      /^semaphore exports +2 of 3 permit\(s\) held by worker-a, worker-a, \d+ ms left$/,
    );
    expect(lines[4]).toMatch(
      /^lock report:1 +held by worker-a since \S+Z, \d+ ms left, fence 1, 1 waiting$/,
    );
    expect(lines[5]).toMatch(
      /^election scheduler +leader worker-a, node 7 by worker-a since \S+Z, \d+ ms left, term 1$/,
    );
    expect(lines[6]).toBe('6 held or waited for');
    const json = await distlock(['ls', 'report:*', '--json', ...nodes()]).done;
    const [only] = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as ListedJson);
    expect(only).toMatchObject({
      kind: 'lock',
      name: 'report:1',
      fence: '1',
      owners: ['worker-a'],
    });

    await lock.release();
    await (await waiting).release();
    for (const permit of held) await permit.release();
    await read.release();
    await written.release();
    await leading.resign();
    await tick.release();
    expect(await listed(locker())).toEqual([]);
    expect((await distlock(['ls', ...nodes()]).done).stdout).toBe('0 held or waited for\n');
  });

  it('finds thousands of locks with SCAN, never KEYS', async () => {
    const [admin] = fixture().admin;
    if (!admin) throw new Error('the fixture has nodes');
    const count = 3_000;
    const pipeline = fixture().admin.map((client) => {
      const batch = client.pipeline();
      for (let i = 0; i < count; i++)
        batch.set(`distlock:{bulk:${i}}`, `${'A'.repeat(22)}.1.bulk`, 'PX', 60_000);
      return batch.exec();
    });
    await Promise.all(pipeline);
    await admin.config('RESETSTAT');
    const found = await listed(locker(), 'bulk:*');
    expect(found).toHaveLength(count);
    expect(found.every((r) => r.kind === 'lock' && r.owners[0] === 'bulk')).toBe(true);
    const stats = String(await admin.info('commandstats'));
    expect(stats).not.toMatch(/^cmdstat_keys:/m);
    const scans = Number(/^cmdstat_scan:calls=(\d+)/m.exec(stats)?.[1]);
    expect(scans).toBeGreaterThanOrEqual(count / 1_000); // COUNT 1000 a call
    // One read per node and resource: the inspect script.
    const scripts = Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
    const evals = Number(/^cmdstat_eval:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
    expect(scripts + evals).toBeGreaterThanOrEqual(count);
    expect(scripts + evals).toBeLessThan(count + 10);
  });

  it('lists with one node of three down, naming it; with two down, says too few could be scanned', async () => {
    const lock = await locker().acquire('report', { ttlMs: 10_000 });
    await fixture().redis.nodes[2]?.kill();
    const [found] = await listed(locker());
    expect(found).toMatchObject({ kind: 'lock', name: 'report', held: true });
    expect(found?.unreachable.map((u) => u.node)).toEqual([
      `127.0.0.1:${fixture().redis.nodes[2]?.port}`,
    ]);
    const shown = await distlock(['ls', ...nodes()]).done;
    expect(shown.stdout).toMatch(
      /^lock report +held by \S+ since \S+, \d+ ms left, 1 node\(s\) unreachable$/m,
    );
    await fixture().redis.nodes[1]?.kill();
    await expect(listed(locker())).rejects.toBeInstanceOf(NoQuorumError);
    const failed = await distlock(['ls', ...nodes()]).done;
    expect(failed.code).toBe(69);
    expect(failed.stderr).toContain('fewer than 2 of 3 node(s) could be scanned. Nodes: ');
    await lock.release();
  });

  it('checks its options before any I/O, and --watch wants a terminal', async () => {
    const one = locker();
    expect(() => one.list({ match: '' })).toThrow(InvalidArgumentError);
    expect(() => one.list({ timeoutMs: 0 })).toThrow('`timeoutMs`');
    expect(() => one.list({ other: 1 } as never)).toThrow(InvalidArgumentError);
    const piped = await distlock(['ls', '--watch', ...nodes()]).done;
    expect(piped.code).toBe(2);
    expect(piped.stderr).toContain('--watch redraws one screen: run it on a terminal');
  });

  it('--watch redraws one screen in place on a terminal', async () => {
    const lock = await locker({ owner: 'watched' }).acquire('report', { ttlMs: 10_000 });
    const command = [process.execPath, CLI, 'ls', '--watch', '200ms', ...nodes()].join(' ');
    // `script` gives the command a terminal; `timeout` ends the watch.
    const run = spawnSync('script', ['-qfec', `timeout 2 ${command}`, '/dev/null'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    const screens = run.stdout.split('\x1b[H\x1b[2J').filter((screen) => screen.length > 0);
    expect(screens.length).toBeGreaterThanOrEqual(2);
    for (const screen of screens.slice(0, 2)) {
      expect(screen).toMatch(/^every \S+, \S+Z\r?\nlock report +held by watched since /);
      expect(screen).toMatch(/\r?\n1 held or waited for\r?\n$/);
    }
    await lock.release();
  });
});
