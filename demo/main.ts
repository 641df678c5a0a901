/**
 * `npm run demo`: distlock at work under faults. Five local Redis nodes (the test kit), four
 * worker processes doing fenced read-modify-write on a shared counter, one node killed and
 * another paused midway. The faults are timed from the first holding (the workers take a
 * few seconds to start), and each lands as a holding begins: while a worker holds the lock. Live progress in the terminal, a summary at the end, and an HTML
 * report (see report.ts) in demo/results/report.html. Every process it starts is stopped at the
 * end, also on Ctrl-C.
 *
 * `--out <dir>` writes the report to `<dir>/report.html` instead
 * (`npm run demo -- --out /tmp/demo`); the tests use it so that they never overwrite the
 * report you made.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { checkHistory, type Holding, readHistory, startRedis } from '../src/testing/index.js';
import type { WorkerConfig } from '../workload/worker.js';
import { handOffStats } from './handoff.js';
import { NodeTimeline } from './nodes.js';
import { Progress } from './progress.js';
import { type Fault, renderReport } from './report.js';
import { timelineSpanMs } from './report-data.js';

const SECONDS = 8;
/** When each fault lands, in ms after the first holding: within the workers' SECONDS. */
const KILL_AFTER_MS = 2_000;
const PAUSE_AFTER_MS = 4_000;
const RESUME_AFTER_MS = 5_500;
const WORKERS = 4;
const TTL_MS = 400;
const RESOURCE = 'counter';
const WORKER = fileURLToPath(new URL('../workload/worker.ts', import.meta.url));
const { values: args } = parseArgs({ options: { out: { type: 'string' } } });
const outDir = resolve(args.out ?? fileURLToPath(new URL('./results/', import.meta.url)));
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
  const holdingBegan: (() => void)[] = [];
  const files = Array.from({ length: WORKERS }, (_, i) => join(dir, `worker-${i}.jsonl`));
  const history = () => readHistory(files.filter((f) => existsSync(f)));
  const startedAt = now();
  const sinceStart = () => now() - startedAt;
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
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'], // the worker says when a holding begins
    });
    worker.on('message', (m) => {
      if (m === 'holding') for (const begin of holdingBegan.splice(0)) begin();
    });
    workers.push(worker);
  }
  const exited = Promise.all(workers.map((w) => new Promise((resolve) => w.once('exit', resolve))));
  /**
   * Resolves as the next holding begins (a holding lasts 5 ms and more), or with false once
   * every worker has exited.
   */
  const nextHolding = () =>
    Promise.race([
      new Promise<true>((resolve) => holdingBegan.push(() => resolve(true))),
      exited.then(() => false),
    ]);

  const faults: Fault[] = [];
  const progress = new Progress({ seconds: SECONDS, startedAt, now, history, faults });
  const nodeTimeline = new NodeTimeline(lockNodes.nodes.map((n, i) => `node ${i + 1} (${n.port})`));
  const nemesis = (async () => {
    const [killed, paused] = [lockNodes.nodes[0], lockNodes.nodes[1]];
    if (!killed || !paused || !(await nextHolding())) return;
    const firstHolding = now();
    /** Waits until `afterMs` past the first holding, then for a holding to begin. */
    const when = async (afterMs: number) => {
      await delay(Math.max(0, firstHolding + afterMs - now()));
      return nextHolding();
    };
    if (!(await when(KILL_AFTER_MS))) return;
    const killedAt = sinceStart(); // SIGKILL is sent at once; the process is reaped after
    const killing = killed.kill();
    nodeTimeline.set(0, 'killed', killedAt);
    faults.push({ at: killedAt, label: `kill -9 node 1 (${killed.port})` });
    await killing;
    if (!(await when(PAUSE_AFTER_MS))) return;
    paused.pause();
    nodeTimeline.set(1, 'paused', sinceStart());
    faults.push({ at: sinceStart(), label: `SIGSTOP node 2 (${paused.port})` });
    // The node resumes even if the workers are done: the history check needs every node.
    await when(RESUME_AFTER_MS);
    paused.resume();
    nodeTimeline.set(1, 'up', sinceStart());
    faults.push({ at: sinceStart(), label: `SIGCONT node 2 (${paused.port})` });
  })();
  await Promise.all([exited, nemesis]);
  const endMs = sinceStart();

  await delay(TTL_MS + 200);
  const store = new Redis(storeNode.urls[0] as string);
  const final = Number((await store.hget(RESOURCE, 'value')) ?? 0);
  store.disconnect();
  // The workers have exited: this history is complete, and the last progress line shows it.
  const events = history();
  const report = checkHistory(events, new Map([[RESOURCE, final]]));
  progress.finish({ acquisitions: report.holdings, counter: report.appliedWrites });
  const holdings = events.filter((e): e is Holding => e.type === 'holding');
  const handOff = handOffStats(holdings);
  const nodes = nodeTimeline.lanes(endMs);
  // The report's timeline and the summary tell one duration: start-up, work and faults.
  const seconds = timelineSpanMs({ startedAt, holdings, nodes, faults }) / 1_000;

  const lines = [
    '',
    `acquisitions        ${report.holdings} by ${WORKERS} workers in ${seconds.toFixed(1)} s, 5 Redis nodes (Redlock)`,
    `hand-off latency    p50 ${ms(handOff.p50Ms)}, p99 ${ms(handOff.p99Ms)} (lock free until the next holder has it)`,
    `faults injected     ${faults.map((f) => f.label).join('; ')}`,
    `violations          ${report.overlaps.length} overlapping holdings, ${report.fencesOutOfOrder.length} writes out of fence order, ${report.lostWrites.length} lost writes`,
    `counter             expected ${report.appliedWrites}, final ${final} ${final === report.appliedWrites ? '(no update lost)' : '(UPDATES LOST)'}`,
  ];
  console.log(lines.join('\n'));
  const html = renderReport({
    startedAt,
    holdings,
    nodes,
    faults,
    violations: report,
    summary: lines.slice(1),
  });
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, 'report.html');
  writeFileSync(file, html);
  const shown = relative(process.cwd(), file);
  console.log(`report              ${shown.startsWith('..') ? file : shown}`);
  process.exitCode = report.ok && final === report.appliedWrites ? 0 : 1;
} finally {
  await cleanUp();
}

function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}
