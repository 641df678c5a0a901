/**
 * `npm run demo`: distlock at work under faults. Five local Redis nodes (the test kit), four
 * worker processes doing fenced read-modify-write on a shared counter, one node killed and
 * another paused midway. Live progress in the terminal, a summary at the end, and an HTML
 * timeline in demo/results/report.html. Every process it starts is stopped at the end, also on
 * Ctrl-C.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { checkHistory, type Holding, readHistory, startRedis } from '../src/testing/index.js';
import type { WorkerConfig } from '../workload/worker.js';
import { Progress } from './progress.js';
import { type Fault, renderReport } from './report.js';

const SECONDS = 8;
const WORKERS = 4;
const TTL_MS = 400;
const RESOURCE = 'counter';
const WORKER = new URL('../workload/worker.ts', import.meta.url).pathname;
const now = () => Number(process.hrtime.bigint()) / 1e6;

const [lockNodes, storeNode] = await Promise.all([startRedis({ nodes: 5 }), startRedis()]);
const dir = mkdtempSync(join(tmpdir(), 'distlock-demo-'));
const workers: ChildProcess[] = [];
const cleanUp = async () => {
  for (const worker of workers) if (worker.exitCode === null) worker.kill('SIGKILL');
  await Promise.all([lockNodes.stop(), storeNode.stop()]);
  rmSync(dir, { recursive: true, force: true });
};
process.once('SIGINT', () => {
  void cleanUp().then(() => process.exit(130));
});

try {
  const files = Array.from({ length: WORKERS }, (_, i) => join(dir, `worker-${i}.jsonl`));
  const startedAt = now();
  for (const [i, out] of files.entries()) {
    const config: WorkerConfig = {
      id: `worker ${i + 1}`,
      lockUrls: lockNodes.urls,
      storeUrl: storeNode.urls[0] as string,
      resource: RESOURCE,
      ttlMs: TTL_MS,
      holdMs: 5,
      seconds: SECONDS,
      fencing: true,
      out,
    };
    const worker = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(config)], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    workers.push(worker);
  }
  const exited = Promise.all(workers.map((w) => new Promise((resolve) => w.once('exit', resolve))));

  const faults: Fault[] = [];
  const progress = new Progress(
    SECONDS,
    () => readHistory(files.filter((f) => existsSync(f))),
    faults,
  );
  const nemesis = (async () => {
    const [killed, paused] = [lockNodes.nodes[0], lockNodes.nodes[1]];
    await delay(2_500);
    await killed?.kill();
    faults.push({ at: now() - startedAt, label: `kill -9 node 1 (${killed?.port})` });
    await delay(2_000);
    paused?.pause();
    faults.push({ at: now() - startedAt, label: `SIGSTOP node 2 (${paused?.port})` });
    await delay(1_500);
    paused?.resume();
    faults.push({ at: now() - startedAt, label: `SIGCONT node 2 (${paused?.port})` });
  })();
  await Promise.all([exited, nemesis]);
  progress.stop();

  await delay(TTL_MS + 200);
  const store = new Redis(storeNode.urls[0] as string);
  const final = Number((await store.hget(RESOURCE, 'value')) ?? 0);
  store.disconnect();
  const events = readHistory(files.filter((f) => existsSync(f)));
  const report = checkHistory(events, new Map([[RESOURCE, final]]));
  const holdings = events.filter((e): e is Holding => e.type === 'holding');
  const gaps = handOffGaps(holdings);

  const lines = [
    '',
    `acquisitions        ${report.holdings} by ${WORKERS} workers in ${SECONDS} s, 5 Redis nodes (Redlock)`,
    `hand-off latency    p50 ${ms(percentile(gaps, 50))}, p99 ${ms(percentile(gaps, 99))} (lock free until the next holder has it)`,
    `faults injected     ${faults.map((f) => f.label).join('; ')}`,
    `violations          ${report.overlaps.length} overlapping holdings, ${report.fencesOutOfOrder.length} writes out of fence order, ${report.lostWrites.length} lost writes`,
    `counter             expected ${report.appliedWrites}, final ${final} ${final === report.appliedWrites ? '(no update lost)' : '(UPDATES LOST)'}`,
  ];
  console.log(lines.join('\n'));
  mkdirSync('demo/results', { recursive: true });
  const html = renderReport({
    holdings,
    faults,
    startedAt,
    seconds: SECONDS,
    summary: lines.slice(1),
  });
  writeFileSync('demo/results/report.html', html);
  console.log(`report              demo/results/report.html`);
  process.exitCode = report.ok && final === report.appliedWrites ? 0 : 1;
} finally {
  await cleanUp();
}

function handOffGaps(holdings: readonly Holding[]): number[] {
  const sorted = [...holdings].sort((a, b) => a.acquiredAt - b.acquiredAt);
  return sorted.slice(1).map((h, i) => h.acquiredAt - (sorted[i] as Holding).releasedAt);
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}
