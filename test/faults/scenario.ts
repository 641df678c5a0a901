/**
 * Runs one fault-suite scenario: workers (child processes) lock and update a shared counter
 * while a nemesis injects faults; then the history is checked.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { build } from 'esbuild';
import { Redis } from 'ioredis';
import { checkHistory, type HistoryReport, readHistory } from '../../src/testing/index.js';
import type { WorkerConfig } from '../../workload/worker.js';

export const RESOURCE = 'counter';
const WORKER = new URL('../../workload/worker.ts', import.meta.url).pathname;

/**
 * Bundles the workload worker (its sources and ioredis) into one JavaScript file in `dir`,
 * for `runScenario`'s `worker`. Each scenario starts four workers: under `node --import tsx`
 * each spends a second or more of CPU resolving and loading the sources through tsx's hooks,
 * on a machine with two cores, while the first ones to start already run; the bundle loads
 * in a fraction of that.
 */
export async function bundleWorker(dir: string): Promise<string> {
  const outfile = join(dir, 'worker.mjs');
  await build({
    entryPoints: [WORKER],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // ioredis is CommonJS: its require() calls of Node's modules need a real require.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  return outfile;
}
/** How long a worker that stopped asking keeps its place in line (its retryDelayMs is 20). */
const WAITER_PATIENCE_MS = 1_000;

/** What a nemesis may act on. */
export interface Targets {
  readonly workers: readonly ChildProcess[];
  /** The worker whose holding began last (it may have ended since). */
  readonly lastHolder: () => ChildProcess | undefined;
  /** How many holdings have begun so far, over all workers. */
  readonly acquisitions: () => number;
  /** Whether every worker's first attempt is over: its locker has met the nodes. */
  readonly started: () => boolean;
  /** Resolves when the run is over; a nemesis loops until then. */
  readonly done: () => boolean;
}

export interface ScenarioOptions {
  /** The worker to run: `bundleWorker`'s file. */
  readonly worker: string;
  readonly lockUrls: readonly string[];
  /** Every lock node's direct URL, for the leftover-key check. */
  readonly nodeUrls: readonly string[];
  readonly storeUrl: string;
  readonly seconds: number;
  readonly fencing: boolean;
  readonly workers?: number;
  readonly ttlMs?: number;
  /** How long each holding lasts. @default 5 */
  readonly holdMs?: number;
  /** Workers hold permits of a semaphore with this many permits, rather than the lock. */
  readonly permits?: number;
  /** Workers take a read-write lock (a third of them write), rather than the lock. */
  readonly readWrite?: boolean;
  /** The workers' `restartGraceMs`; by default their lockers' own. */
  readonly restartGraceMs?: number;
  readonly nemesis?: (targets: Targets) => Promise<void>;
}

/** Runs workers and the nemesis for `seconds`, then checks the history. */
export async function runScenario(options: ScenarioOptions): Promise<HistoryReport> {
  const { seconds, fencing, ttlMs = 400, holdMs = 5, workers: count = 4 } = options;
  const dir = mkdtempSync(join(tmpdir(), 'distlock-faults-'));
  const store = new Redis(options.storeUrl);
  try {
    await store.del(RESOURCE);
    const files = Array.from({ length: count }, (_, i) => join(dir, `worker-${i}.jsonl`));
    const workers = files.map((out, i) => {
      const config: WorkerConfig = {
        id: `w${i}`,
        lockUrls: options.lockUrls,
        storeUrl: options.storeUrl,
        resource: RESOURCE,
        ttlMs,
        holdMs,
        seconds,
        fencing,
        out,
        ...(options.permits === undefined ? {} : { permits: options.permits }),
        ...(options.readWrite ? { readWrite: true } : {}),
        ...(options.restartGraceMs === undefined ? {} : { restartGraceMs: options.restartGraceMs }),
      };
      return spawn(process.execPath, [options.worker, JSON.stringify(config)], {
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
    });
    const started = new Set<ChildProcess>();
    let acquisitions = 0;
    let lastHolder: ChildProcess | undefined;
    for (const w of workers) {
      w.on('message', (m) => {
        if (m === 'started') started.add(w);
        else if (m === 'holding') {
          lastHolder = w;
          acquisitions++;
        }
      });
    }
    const exited = workers.map((w) => new Promise((resolve) => w.once('exit', resolve)));
    let finished = false;
    const targets: Targets = {
      workers,
      lastHolder: () => lastHolder,
      acquisitions: () => acquisitions,
      started: () => started.size === workers.length,
      done: () => finished,
    };
    const nemesis = options.nemesis?.(targets) ?? Promise.resolve();
    await Promise.race([Promise.all(exited), delay((seconds + 20) * 1_000)]);
    finished = true;
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await nemesis;
    // Every lock key must be gone by the longest a key can outlive the last request: a
    // lease's TTL, or a hand-over to a waiter that is gone, which lasts as long as its place
    // in line would (1 s for the workers: max(1 s, 5 × retryDelayMs)). A request delivered
    // late can put a gone waiter back in line, and a release then hand it the lock. No
    // request is left to arrive now (the workers have exited, the nemesis has healed every
    // node and proxy and delivered what it held), so the check ends as soon as no key is
    // left, and fails on the keys still there at that bound.
    const bound = performance.now() + Math.max(ttlMs, WAITER_PATIENCE_MS) + 200;
    await delay(LEFTOVER_POLL_MS);
    let leftover = await leftoverLockKeys(options.nodeUrls);
    while (leftover.length > 0 && performance.now() < bound) {
      await delay(Math.min(LEFTOVER_POLL_MS, Math.max(0, bound - performance.now())));
      leftover = await leftoverLockKeys(options.nodeUrls);
    }
    const final = Number((await store.hget(RESOURCE, 'value')) ?? 0);
    return checkHistory(
      readHistory(files.filter((f) => existsSync(f))),
      new Map([[RESOURCE, final]]),
      leftover,
    );
  } finally {
    store.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** How often the leftover-key check looks again (ms). */
const LEFTOVER_POLL_MS = 50;

async function leftoverLockKeys(urls: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const url of urls) {
    const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 500 });
    client.on('error', () => {});
    const lock = `distlock:{${RESOURCE}}`;
    const holdKeys = [lock, `${lock}:permits`, `${lock}:rw:writer`, `${lock}:rw:readers`];
    const keys = await client.keys(`${lock}*`).catch(() => [] as string[]);
    for (const key of keys.filter((k) => holdKeys.includes(k))) {
      const isSet = key.endsWith('permits') || key.endsWith('readers');
      const [holders, ttl, line] = await Promise.all([
        isSet ? client.zrange(key, 0, -1) : client.get(key),
        client.pttl(key),
        client.zrange(`${key}:queue`, 0, -1, 'WITHSCORES'),
      ]);
      found.push(`${url} ${key} held by ${holders} for ${ttl} ms more; line: [${line.join(' ')}]`);
    }
    client.disconnect();
  }
  return found;
}
