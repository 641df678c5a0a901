import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, Locker, schedule } from '../../src/index.js';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(1);
const PROCESS = new URL('../support/scheduler-process.ts', import.meta.url).pathname;

describe('schedule', () => {
  it('runs each tick of a 1-second cron exactly once across three processes', async () => {
    const url = fixture().redis.urls[0] as string;
    const fleet = [0, 1, 2].map(() => {
      const child = spawn(process.execPath, ['--import', 'tsx', PROCESS, url, 'report'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      return { child, exited, output: () => output };
    });
    await delay(5_500);
    for (const member of fleet) member.child.kill('SIGTERM');
    await Promise.all(fleet.map((m) => m.exited));

    const events = fleet.flatMap((m) =>
      m
        .output()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { pid: number; outcome: string; tick: string }),
    );
    const ran = events.filter((e) => e.outcome === 'ran');
    const perTick = new Map<string, number>();
    for (const e of ran) perTick.set(e.tick, (perTick.get(e.tick) ?? 0) + 1);
    expect(perTick.size).toBeGreaterThanOrEqual(3);
    expect([...perTick.values()].every((count) => count === 1)).toBe(true);
    // Every member saw the ticks: the others skipped them.
    expect(events.filter((e) => e.outcome === 'skipped').length).toBeGreaterThanOrEqual(
      perTick.size,
    );
    // All three members took part (a member that never ticked would prove nothing).
    expect(new Set(events.map((e) => e.pid)).size).toBe(3);
    expect(events.filter((e) => e.outcome === 'failed').map((e) => JSON.stringify(e))).toEqual([]);
  });

  it('rejects bad arguments synchronously', () => {
    const locker = new Locker({ nodes: fixture().redis.urls });
    const job = () => {};
    expect(() => schedule(locker, 'x', 'not a cron', { lockAtMostFor: 1_000 }, job)).toThrow(
      /`cron`/,
    );
    expect(() =>
      schedule(locker, 'x', '* * * * *', { lockAtMostFor: 1_000, lockAtLeastFor: 2_000 }, job),
    ).toThrow(InvalidArgumentError);
    expect(() => schedule(locker, '', '* * * * *', { lockAtMostFor: 1_000 }, job)).toThrow(
      /`resource`/,
    );
    expect(() => schedule(locker, 'x', '* * * * *', { lockAtMostFor: 0 }, job)).toThrow(
      /`lockAtMostFor`/,
    );
    return locker.close();
  });
});
