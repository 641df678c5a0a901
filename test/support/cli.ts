import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { isRunning } from './processes.js';
import type { RedisFixture } from './redis.js';
import { NODE, type Runtime } from './runtimes.js';

/** The built command (`npm test` builds first), run as users run it. */
export const CLI = 'dist/esm/cli/main.js';

/** What a finished `distlock` printed, and its exit code. */
export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running `distlock`: `stderr()` is what it printed there so far. */
export interface Run {
  readonly child: ChildProcess;
  readonly done: Promise<Finished>;
  stderr(): string;
}

/**
 * Starts the built `distlock` with `args` (and `env` on top of this process's), under Node or
 * `runtime`.
 */
export function distlock(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  runtime: Runtime = NODE,
): Run {
  const child = spawn(runtime.command, [...runtime.args, CLI, ...args], {
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<Finished>((resolve) =>
    child.once('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done, stderr: () => stderr };
}

/** `--redis <url>` for every node of the fixture. */
export const redisArgs = (fixture: RedisFixture) =>
  fixture.redis.urls.flatMap((url) => ['--redis', url]);

/**
 * Resolves once `key` exists on a majority of the nodes (a command's lock is held there; on
 * the first node alone it may still be an attempt that fails). A test that must know the
 * holder has its answers too waits for its command to start instead.
 */
export async function lockHeld(fixture: RedisFixture, key: string, withinMs = 10_000) {
  const deadline = performance.now() + withinMs;
  const majority = Math.floor(fixture.admin.length / 2) + 1;
  while ((await nodesWith(fixture, key)) < majority) {
    if (performance.now() > deadline) throw new Error(`${key} not locked after ${withinMs} ms`);
    await delay(20);
  }
}

/** The longest `PTTL` of `key` over the nodes (-2 where it exists on none). */
export async function longestPttl(fixture: RedisFixture, key: string): Promise<number> {
  const pttls = await Promise.all(fixture.admin.map((client) => client.pttl(key)));
  return Math.max(-2, ...pttls);
}

/** On how many nodes `key` exists. */
export async function nodesWith(fixture: RedisFixture, key: string): Promise<number> {
  const found = await Promise.all(fixture.admin.map((client) => client.exists(key)));
  return found.reduce((sum: number, n) => sum + n, 0);
}

/**
 * Starts watching node `index` of `fixture` (MONITOR) for commands on `key`. The function it
 * resolves waits for the first one, within `withinMs` of the start, and stops watching: proof
 * that, say, a `distlock` started since has tried to take the key (any client counts, so
 * start watching once the test's own commands on `key` are done).
 */
export async function watchKey(
  fixture: RedisFixture,
  key: string,
  index = 0,
  withinMs = 10_000,
): Promise<() => Promise<void>> {
  const client = fixture.admin[index];
  if (!client) throw new Error(`the fixture has no node ${index}`);
  const monitor = await client.monitor();
  monitor.on('error', () => {});
  const seen = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no command on ${key} within ${withinMs} ms`)),
      withinMs,
    );
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (!args.includes(key)) return;
      clearTimeout(timer);
      resolve();
    });
  });
  seen.catch(() => {}); // a timeout before anyone waits is not unhandled: the waiter gets it
  return () => seen.finally(() => monitor.disconnect());
}

/** Resolves once `run` printed something matching `pattern` on stderr. */
export async function printed(run: Run, pattern: RegExp, withinMs = 10_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!pattern.test(run.stderr())) {
    if (performance.now() > deadline) {
      throw new Error(`no ${pattern} on stderr after ${withinMs} ms: ${run.stderr()}`);
    }
    await delay(20);
  }
}

/** A shell script that starts `sleep 30` in the background, writes its pid to `file`, waits. */
export const withBackgroundSleep = (file: string) => `sleep 30 & echo $! > ${file}; wait`;

/** The pid a command wrote to `file`, once it is there in full; added to `started`. */
export async function pidWrittenTo(
  file: string,
  started: number[],
  withinMs = 10_000,
): Promise<number> {
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
export async function stopsRunning(pid: number, withinMs = 5_000): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  while (isRunning(pid)) {
    if (performance.now() > deadline) return false;
    await delay(20);
  }
  return true;
}

/** Kills (SIGKILL) whatever of `pids` still runs, and empties it. */
export function killAll(pids: number[]): void {
  for (const pid of pids.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
}
