import { type ChildProcess, spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import cron from 'node-cron';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError, type Locker, NoQuorumError } from '../../src/index.js';
import { runCoordinator } from '../../src/schedule/node-cron.js';
import { type RedisFixture, useLockers, useRedis } from '../support/redis.js';

const single = useRedis(1);
const three = useRedis(3);
const lockers = useLockers(single);
const MEMBER = new URL('../support/node-cron-member.mjs', import.meta.url).pathname;
/** Each fire's job in the fleet: long enough to kill its runner in the middle of it. */
const JOB_MS = 400;
/** node-cron's `distributedLease` in the fleet: each fire's lockAtMostFor (and lockAtLeastFor). */
const LEASE_MS = 3_000;
/** A guard against a hang, not a measured bound: what never happens fails the test here. */
const NEVER_MS = 20_000;

interface MemberEvent {
  pid: number;
  stopping: boolean;
  event: 'ready' | 'start' | 'skipped' | 'missed' | 'warn' | 'error';
  fire?: string;
  reason?: string;
  message?: string;
}

/** The fleet's events as they arrive, and a wait for the first that matches. */
class EventLog {
  readonly events: MemberEvent[] = [];
  #waiters: (() => void)[] = [];

  add(event: MemberEvent): void {
    this.events.push(event);
    for (const wake of this.#waiters.splice(0)) wake();
  }

  async first(what: string, matches: (event: MemberEvent) => boolean): Promise<MemberEvent> {
    const deadline = Date.now() + NEVER_MS;
    for (;;) {
      const found = this.events.find(matches);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no ${what} in ${JSON.stringify(this.events)}`);
      await Promise.race([new Promise<void>((wake) => this.#waiters.push(wake)), delay(500)]);
    }
  }
}

/**
 * The members load the built package, as the examples do (`npm run build` first): fail
 * rather than test a build older than the coordinator's sources.
 */
function expectBuilt(): void {
  const built = (path: string) => statSync(new URL(`../../${path}`, import.meta.url)).mtimeMs;
  const dist = built('dist/esm/schedule/node-cron.js');
  for (const source of ['src/schedule/node-cron.ts', 'src/schedule/tick-lock.ts']) {
    expect(dist, `dist/ is older than ${source}: npm run build`).toBeGreaterThanOrEqual(
      built(source),
    );
  }
}

/** Every member started, so that none outlives its test, whatever failed. */
const spawned = new Set<ChildProcess>();
afterEach(() => {
  for (const child of spawned) if (child.exitCode === null) child.kill('SIGKILL');
  spawned.clear();
});

function startMember(name: string, urls: readonly string[], log: EventLog): ChildProcess {
  const args = [MEMBER, name, String(JOB_MS), String(LEASE_MS), ...urls];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  spawned.add(child);
  let pending = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString()).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line) log.add(JSON.parse(line) as MemberEvent);
  });
  return child;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

/**
 * Three instances of a 1-second node-cron task, each in its own process with its own Locker
 * on `urls`. Once all three schedule, the instance that starts the second fire is SIGKILLed
 * in the middle of its job; the survivors are stopped once the second fire after it started.
 * Returns every event, the fires from the first to that last one, and the killed pid.
 */
async function runFleet(name: string, urls: readonly string[]) {
  const log = new EventLog();
  const members = [0, 1, 2].map(() => startMember(name, urls, log));
  try {
    const ready = () => log.events.filter((e) => e.event === 'ready').length === 3;
    await log.first('three ready members', ready);
    // Every member was scheduling before this instant: each whole second after it is a fire
    // that all three try.
    const first = Math.ceil((Date.now() + 1) / 1_000) * 1_000;
    const fires = [0, 1, 2, 3].map((n) => new Date(first + n * 1_000).toISOString());
    // A fire is settled once the live members each said what they did with it (started or
    // skipped it), or once any spoke of a later fire: a fire nobody started fails below,
    // without waiting for a timeout.
    const settled = (fire: string, members: number, enough = (_: MemberEvent) => false) =>
      log.first(`every member's word on ${fire}`, (e) => {
        if (enough(e) || (e.fire !== undefined && e.fire > fire)) return true;
        const told = log.events.filter((t) => t.fire === fire && t.event !== 'missed');
        return told.length >= members;
      });
    await settled(fires[1] as string, 3, (e) => e.event === 'start' && e.fire === fires[1]);
    const victim = log.events.find((e) => e.event === 'start' && e.fire === fires[1]);
    const killed = members.find((child) => child.pid === victim?.pid);
    killed?.kill('SIGKILL'); // mid-job: the fire's lock stays taken, by a dead instance
    await settled(fires[3] as string, 2);
    for (const child of members) if (child !== killed) child.kill('SIGTERM');
    await Promise.all(members.map(exited));
    return { events: log.events, fires, killed: victim?.pid, killedBy: killed?.signalCode };
  } finally {
    for (const child of members) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

describe('distlock/node-cron: runCoordinator', () => {
  it('runs each fire once across 3 node-cron instances while one dies holding a fire, on 1 node and on Redlock', async () => {
    expectBuilt();
    const [alone, redlock] = await Promise.all([
      runFleet('fleet-1', single().redis.urls),
      runFleet('fleet-3', three().redis.urls),
    ]);
    for (const { events, fires, killed, killedBy } of [alone, redlock]) {
      const started = events.filter((e) => e.event === 'start');
      const runs = (fire: string) => started.filter((e) => e.fire === fire).map((e) => e.pid);
      // No fire ran twice, from the first fire until the survivors exited.
      const perFire = new Map<string, number>();
      for (const e of started) perFire.set(e.fire ?? '', (perFire.get(e.fire ?? '') ?? 0) + 1);
      expect([...perFire].filter(([, count]) => count > 1)).toEqual([]);
      // Missed: a whole second from the first fire all three tried to the last one awaited
      // that no instance started. The killed instance started its fire: it counts as run.
      const story = JSON.stringify(events);
      expect(
        fires.map((fire) => runs(fire).length),
        story,
      ).toEqual([1, 1, 1, 1]);
      expect(killedBy).toBe('SIGKILL');
      expect(runs(fires[1] as string)).toEqual([killed]);
      for (const fire of fires.slice(2)) expect(runs(fire)).not.toContain(killed);
      // Every live member took part in every fire: it started it, or skipped it (not elected,
      // or fail-closed when its nodes did not answer in time: that skip is node-cron's rule).
      const skips = (fire: string) =>
        events.filter((e) => e.event === 'skipped' && e.fire === fire);
      expect(fires.map((fire) => skips(fire).length)).toEqual([2, 2, 1, 1]);
      expect(skips(fires[0] as string).map((e) => e.reason)).toContain('not-elected');
      // Nothing else went wrong: no fire node-cron missed, no failed onComplete, no warning.
      const failClosed = 'Run coordinator failed; skipping execution (fail-closed)';
      const troubles = events.filter(
        (e) => ['warn', 'error', 'missed'].includes(e.event) && e.message !== failClosed,
      );
      expect(troubles.filter((e) => !e.stopping)).toEqual([]);
    }
  }, 60_000);

  it("locks a fire once, and keeps it lockAtLeastFor after onComplete, under node-cron's key", async () => {
    const admin = single().admin[0] as Redis;
    const [a, b] = [lockers(), lockers()] as [Locker, Locker];
    const key = 'report:2026-01-01T03:00:00.000Z';
    const redisKey = `distlock:{node-cron:${key}}`;
    const keeping = runCoordinator(a, { lockAtLeastFor: 500 });
    const other = runCoordinator(b);
    expect(await keeping.shouldRun(key, 2_000)).toBe(true);
    expect(await other.shouldRun(key, 2_000)).toBe(false);
    await keeping.onComplete(key);
    const pttl = await admin.pttl(redisKey);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(500);
    expect(await other.shouldRun(key, 2_000)).toBe(false); // a late instance: still taken
    await delay(pttl + 50);
    expect(await other.shouldRun(key, 2_000)).toBe(true); // free once lockAtLeastFor ran out
    // By default the whole lease: a fire's lock frees nothing another fire needs.
    await other.onComplete(key);
    expect(await admin.pttl(redisKey)).toBeGreaterThan(500);
    // onComplete for a fire this instance does not hold does nothing.
    await expect(keeping.onComplete('report:2026-01-01T04:00:00.000Z')).resolves.toBeUndefined();
  });

  it('rejects onComplete with the LockLostError when the job outran distributedLease', async () => {
    const coordinator = runCoordinator(lockers(), { lockAtLeastFor: 0 });
    const key = 'overrun:2026-01-01T03:00:00.000Z';
    expect(await coordinator.shouldRun(key, 300)).toBe(true);
    await delay(300 + 50); // the job runs past the fire's lockAtMostFor
    await expect(coordinator.onComplete(key)).rejects.toMatchObject({
      code: 'LOCK_LOST',
      message: expect.stringContaining('validity ran out'),
    });
  });

  it('skips the fire, fail-closed, when Redis fails: no run, the error logged, no unhandled rejection', async () => {
    const fixture: RedisFixture = single();
    await fixture.redis.nodes[0]?.kill();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const logged: unknown[] = [];
    let ran = 0;
    const task = cron.schedule('* * * * * *', () => void ran++, {
      name: 'down',
      distributed: true,
      distributedLease: 2_000,
      runCoordinator: runCoordinator(lockers({ nodeTimeoutMs: 200 })),
      logger: { info() {}, warn() {}, debug() {}, error: (_, error) => logged.push(error) },
    });
    try {
      const skipped = await new Promise<{ reason?: string }>((resolve) =>
        task.once('execution:skipped', resolve),
      );
      expect(skipped.reason).toBe('coordinator-error');
      await delay(0);
      expect(logged).toEqual([expect.any(NoQuorumError)]);
      expect(ran).toBe(0);
      expect(unhandled).toEqual([]);
    } finally {
      await task.destroy();
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('rejects bad arguments synchronously, naming the field, before any I/O', () => {
    const locker = lockers();
    const field = (call: () => unknown) => {
      try {
        call();
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidArgumentError);
        return (error as InvalidArgumentError).field;
      }
      throw new Error('did not throw');
    };
    expect(field(() => runCoordinator(undefined as unknown as Locker))).toBe('locker');
    expect(field(() => runCoordinator(locker, null as unknown as object))).toBe('options');
    expect(field(() => runCoordinator(locker, { lockAtLeastFor: -1 }))).toBe('lockAtLeastFor');
    expect(field(() => runCoordinator(locker, { lockAtLeastFor: 1.5 }))).toBe('lockAtLeastFor');
    const schedulesOption = { lockAtMostFor: 5_000 } as object;
    expect(() => runCoordinator(locker, schedulesOption)).toThrow(/distributedLease/);
    expect(field(() => runCoordinator(locker, { lockAtleastFor: 5 } as object))).toBe(
      'lockAtleastFor',
    );
    const coordinator = runCoordinator(locker, { lockAtLeastFor: 5_000 });
    expect(field(() => coordinator.shouldRun('', 10_000))).toBe('key');
    expect(field(() => coordinator.shouldRun('k:t', 0))).toBe('distributedLease');
    expect(field(() => coordinator.shouldRun('k:t', 1_000))).toBe('lockAtLeastFor');
    expect(() => coordinator.shouldRun('k:t', 1_000)).toThrow(/distributedLease = 1000/);
    return expect(single().admin[0]?.dbsize()).resolves.toBe(0);
  });
});
