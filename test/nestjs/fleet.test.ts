/**
 * Three instances of a NestJS application (test/nestjs/app/fleet.ts) in three processes, on
 * three Redis masters (Redlock), with an every-second @Cron job under @OncePerTick: two
 * compiled as Nest's CLI sets a project up (CommonJS, experimentalDecorators,
 * emitDecoratorMetadata), one as an ESM project. One instance is SIGKILLed while it runs a
 * tick: every tick still runs exactly once.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const REPO = join(import.meta.dirname, '../..');
const APP = join(REPO, 'test/nestjs/app');
/** The job's lease: its tick's lock lives at most lockAtMostFor = 900 ms, below the interval. */
const TICK_MS = 1_000;

/** Compiles the app with tsc under `config` into test/nestjs/.out-<format>, runnable there. */
function compile(format: 'cjs' | 'esm'): string {
  const out = join(REPO, `test/nestjs/.out-${format}`);
  rmSync(out, { recursive: true, force: true });
  const tsc = join(REPO, 'node_modules/typescript/bin/tsc');
  execFileSync(process.execPath, [
    tsc,
    '-p',
    join(APP, `tsconfig.${format}.json`),
    '--outDir',
    out,
  ]);
  const type = format === 'cjs' ? 'commonjs' : 'module';
  writeFileSync(join(out, 'package.json'), JSON.stringify({ type }));
  // The app imports 'distlock' as a dependency would: the built package, through node_modules.
  mkdirSync(join(out, 'node_modules'));
  symlinkSync(REPO, join(out, 'node_modules/distlock'));
  return join(out, 'fleet.js');
}

const instances: ChildProcess[] = [];

/** Starts one instance; resolves once it said it is ready (its Locker injected by type). */
function start(script: string): Promise<ChildProcess> {
  const nodes = fixture().redis.urls.join(',');
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, FLEET_NODES: nodes },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  instances.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk;
      if (/^ready \d+ true$/m.test(output)) resolve(child);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.once('exit', (code) => reject(new Error(`instance exited (${code}): ${output}`)));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** The runs so far: `[second, pid]` of each, in the order they began. */
async function runs(list = 'fleet:runs'): Promise<[number, number][]> {
  const lines = (await fixture().admin[0]?.lrange(list, 0, -1)) ?? [];
  return lines.map((line) => line.split(' ').slice(0, 2).map(Number) as [number, number]);
}

async function until<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('distlock/nestjs in a fleet of three NestJS applications', () => {
  let cjs: string;
  let esm: string;
  beforeAll(() => {
    if (!existsSync(join(REPO, 'dist/cjs/nestjs/index.js'))) {
      throw new Error('build the package first (npm run build): the apps import it');
    }
    cjs = compile('cjs');
    esm = compile('esm');
  }, 120_000);

  afterAll(async () => {
    for (const child of instances) child.kill('SIGKILL');
    await Promise.all(instances.map(exited));
  });

  it('runs every tick once, also when the instance running one is SIGKILLed', async () => {
    const fleet = await Promise.all([start(cjs), start(cjs), start(esm)]);
    const pids = new Set(fleet.map((child) => child.pid));
    // A tick that began at least two ticks in: SIGKILL its instance while the job runs (400 ms).
    const first = await until(async () => (await runs())[0], 10 * TICK_MS);
    const [killedSecond, killedPid] = await until(async () => {
      const latest = (await runs()).at(-1);
      return latest && latest[0] >= first[0] + 2 ? latest : undefined;
    }, 10 * TICK_MS);
    const victim = fleet.find((child) => child.pid === killedPid) as ChildProcess;
    victim.kill('SIGKILL');
    await exited(victim);
    const done = await runs('fleet:done');
    expect(done).not.toContainEqual([killedSecond, killedPid]); // killed mid-tick

    // Four more ticks on the two left, then they shut down (enableShutdownHooks).
    await until(async () => {
      const latest = (await runs()).at(-1);
      return latest && latest[0] >= killedSecond + 4 ? latest : undefined;
    }, 10 * TICK_MS);
    const survivors = fleet.filter((child) => child !== victim);
    for (const child of survivors) child.kill('SIGTERM');
    await Promise.all(survivors.map(exited));
    // Nest closes the application (and its locker), then ends by the signal it got.
    expect(survivors.map((child) => child.signalCode)).toEqual(['SIGTERM', 'SIGTERM']);

    const all = await runs();
    const last = all.at(-1)?.[0] as number;
    const seconds = new Map<number, number[]>();
    for (const [second, pid] of all) seconds.set(second, [...(seconds.get(second) ?? []), pid]);
    // Every whole tick from the first to the last: exactly one run each (0 doubles, 0 misses).
    for (let second = first[0]; second <= last; second++) {
      expect(seconds.get(second), `tick ${second}`).toHaveLength(1);
    }
    expect(all.every(([, pid]) => pids.has(pid))).toBe(true);
    const after = all.filter(([second]) => second > killedSecond).map(([, pid]) => pid);
    expect(after).not.toContain(killedPid);
    expect(after.length).toBeGreaterThanOrEqual(4);
  }, 60_000);
});
