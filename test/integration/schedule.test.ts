import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, Locker, LockLostError, schedule } from '../../src/index.js';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(1);
const PROCESS = new URL('../support/scheduler-process.ts', import.meta.url).pathname;
/** How long the fleet of the first test may take to run three ticks: a hang, past this. */
const FLEET_LIMIT_MS = 40_000;

/** A promise and the function that resolves it. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('schedule', () => {
  it(
    'runs each tick of a 1-second cron exactly once across three processes',
    async () => {
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
      const read = () =>
        fleet.flatMap((m) =>
          m
            .output()
            .split('\n')
            .filter((line) => line.endsWith('}'))
            .map((line) => JSON.parse(line) as { pid: number; outcome: string; tick: string }),
        );
      // Until three ticks ran and every member reported: starting three processes under tsx
      // takes seconds on a busy machine, so no fixed time would do.
      const startedAt = performance.now();
      while (performance.now() - startedAt < FLEET_LIMIT_MS) {
        const seen = read();
        const ticks = new Set(seen.filter((e) => e.outcome === 'ran').map((e) => e.tick));
        if (ticks.size >= 3 && new Set(seen.map((e) => e.pid)).size === 3) break;
        await delay(100);
      }
      await delay(1_000); // the members' reports of the last tick
      for (const member of fleet) member.child.kill('SIGTERM');
      await Promise.all(fleet.map((m) => m.exited));

      const events = read();
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
      expect(events.filter((e) => e.outcome === 'failed').map((e) => JSON.stringify(e))).toEqual(
        [],
      );
    },
    FLEET_LIMIT_MS + 20_000,
  );

  it('survives a job ending within nodeTimeoutMs of lockAtLeastFor, and a throwing onTick', async () => {
    const locker = new Locker({ nodes: fixture().redis.urls, nodeTimeoutMs: 500 });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const ticks: { outcome: string; pttl: number }[] = [];
    const admin = fixture().admin[0] as Redis;
    const { promise: firstTick, resolve } = deferred<void>();
    const job = schedule(
      locker,
      'short',
      '* * * * * *',
      {
        lockAtMostFor: 3_000,
        lockAtLeastFor: 1_500,
        onTick: async (outcome) => {
          ticks.push({ outcome, pttl: await admin.pttl('distlock:{schedule:short}') });
          resolve();
          throw new Error('a hook that throws');
        },
      },
      () => delay(1_100), // ends with ~400 ms of lockAtLeastFor left, below the node timeout
    );
    await firstTick;
    await job.stop();
    await locker.close();
    process.off('warning', onWarning);
    expect(ticks[0]?.outcome).toBe('ran');
    expect(ticks[0]?.pttl).toBeGreaterThan(100);
    expect(ticks[0]?.pttl).toBeLessThanOrEqual(420);
    expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([
      'DistlockScheduleWarning: onTick of schedule "short" failed: a hook that throws',
    ]);
  });

  it('keeps a tick locked until exactly lockAtLeastFor, and names it by its cron instant', async () => {
    const [locker, other] = [0, 1].map(() => new Locker({ nodes: fixture().redis.urls }));
    const admin = fixture().admin[0] as Redis;
    const { promise: firstTick, resolve } = deferred<{
      jobSaw: Date;
      hookSaw: Date;
      pttl: number;
      otherGot: boolean;
    }>();
    let jobSaw = new Date(0);
    const job = schedule(
      locker as Locker,
      'dedupe',
      '* * * * * *',
      {
        lockAtMostFor: 3_000,
        lockAtLeastFor: 2_000,
        onTick: async (outcome, hookSaw) => {
          if (outcome !== 'ran') return;
          const pttl = await admin.pttl('distlock:{schedule:dedupe}');
          // A node whose clock runs ~960 ms behind tries the same tick now.
          const lock = await other?.tryAcquire('schedule:dedupe', { ttlMs: 2_000 });
          resolve({ jobSaw, hookSaw, pttl, otherGot: lock !== null });
        },
      },
      async ({ scheduledAt }) => {
        jobSaw = scheduledAt;
        await delay(1_500); // leaves ~500 ms of lockAtLeastFor
      },
    );
    const tick = await firstTick;
    await job.stop();
    await Promise.all([locker?.close(), other?.close()]);
    expect(tick.otherGot).toBe(false);
    expect(tick.pttl).toBeGreaterThan(0);
    expect(tick.pttl).toBeLessThanOrEqual(500);
    expect(tick.jobSaw.getMilliseconds()).toBe(0); // the cron instant, not when a timer fired
    expect(tick.hookSaw).toEqual(tick.jobSaw);
  });

  it('keeps lockAtLeastFor when the locker closes during a tick', async () => {
    const locker = new Locker({ nodes: fixture().redis.urls });
    const admin = fixture().admin[0] as Redis;
    const { promise: jobStarted, resolve } = deferred<void>();
    const job = schedule(
      locker,
      'deploy',
      '* * * * * *',
      { lockAtMostFor: 10_000, lockAtLeastFor: 5_000 },
      async ({ signal }) => {
        resolve();
        await new Promise((done) => signal.addEventListener('abort', done)); // stops when told
      },
    );
    await jobStarted;
    await locker.close(); // a graceful deploy, mid-tick
    await job.stop();
    const pttl = await admin.pttl('distlock:{schedule:deploy}');
    expect(pttl).toBeGreaterThan(3_500); // kept until lockAtLeastFor, not deleted
    expect(pttl).toBeLessThanOrEqual(5_000);
  });

  it.each([
    ['the job ran past lockAtMostFor', 'validity ran out', async () => delay(600)],
    [
      'the key was gone from the nodes when the job ended',
      'no longer held',
      async () => {
        await fixture().admin[0]?.del('distlock:{schedule:overrun}'); // evicted, flushed...
      },
    ],
  ])('reports a tick as lost, with the LockLostError, when %s', async (_, reason, work) => {
    const locker = new Locker({ nodes: fixture().redis.urls });
    const { promise: firstTick, resolve } = deferred<{ outcome: string; error: unknown }>();
    const job = schedule(
      locker,
      'overrun',
      '* * * * * *',
      { lockAtMostFor: 300, onTick: (outcome, _at, error) => resolve({ outcome, error }) },
      work, // ignores its signal
    );
    const tick = await firstTick;
    await job.stop();
    await locker.close();
    expect(tick.outcome).toBe('lost');
    expect(tick.error).toBeInstanceOf(LockLostError);
    expect((tick.error as Error).message).toContain(reason);
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
