/**
 * `npm run bench`: distlock against the libraries users would otherwise pick, on the same
 * redis-server processes, in one run. Figures are medians over repetitions; compare ratios,
 * which hold within a run, rather than absolute numbers, which drift on shared machines.
 *
 *   npm run bench                              every scenario
 *   npm run bench -- --scenario uncontended    one scenario (uncontended|uncontended-slow|uncontended-paced|cost|profile|contention|faults|memory|waiters|nodes|semaphore|cluster-wake-ups)
 *   npm run bench -- --seconds 1 --reps 3      shorter or longer runs
 *   npm run bench -- --warm-up 2               seconds of cycles before each measured run (default 1)
 *   npm run bench -- --contender distlock --contender floor    some contenders only
 *   npm run bench -- --client ioredis5         every contender on ioredis 5 clients (default: ioredis 6)
 *   DISTLOCK_BASELINE=../other-checkout npm run bench          adds that build as "distlock baseline"
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { startRedis } from '../src/testing/index.js';
import { clientDescription } from './clients.js';
import { clusterWakeUps } from './cluster-wake-ups.js';
import type { ContenderSpec } from './contenders.js';
import { contention } from './contention.js';
import { cost } from './cost.js';
import { delayedNetwork } from './delayed-network.js';
import { faults } from './faults.js';
import { memory } from './memory.js';
import { NODE_COUNTS, nodes } from './nodes.js';
import { profile } from './profile.js';
import { report } from './report.js';
import { semaphore } from './semaphore.js';
import { uncontended, WARM_UP_SECONDS } from './uncontended.js';
import { waiters } from './waiters.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', multiple: true },
    seconds: { type: 'string', default: '1.5' },
    'warm-up': { type: 'string', default: String(WARM_UP_SECONDS) },
    reps: { type: 'string', default: '3' },
    contender: { type: 'string', multiple: true },
    client: { type: 'string' },
    'reply-delay-ms': { type: 'string', default: '1' },
    'pause-ms': { type: 'string', default: '1' },
  },
});
// Before anything opens a client or forks a worker: workers read it from the environment.
if (values.client) process.env.BENCH_CLIENT = values.client;
const client = clientDescription();
const scenarios = new Set(
  values.scenario ?? [
    'uncontended',
    'uncontended-slow',
    'uncontended-paced',
    'cost',
    'profile',
    'contention',
    'faults',
    'memory',
    'waiters',
    'nodes',
    'semaphore',
    'cluster-wake-ups',
  ],
);
const seconds = Number(values.seconds);
const reps = Number(values.reps);
const warmUpSeconds = Number(values['warm-up']);
const replyDelayMs = Number(values['reply-delay-ms']);
const pauseMs = Number(values['pause-ms']);
const only = values.contender
  ? (spec: Pick<ContenderSpec, 'name'>) =>
      values.contender?.some((n) => spec.name.toLowerCase().includes(n.toLowerCase())) ?? true
  : undefined;

/**
 * The last commit touching src/, and whether src/ has uncommitted changes. Contention workers
 * are forked per run and load src/ from disk, so edits during a run would mix versions.
 */
function sourceState(): string {
  const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
  try {
    const dirty = git('status', '--porcelain', '--', 'src') ? ' with uncommitted changes' : '';
    return `src/ at ${git('log', '-1', '--format=%h', '--', 'src')}${dirty}`;
  } catch {
    return 'src/ at unknown commit';
  }
}

const sourceAtStart = sourceState();
const startedAt = performance.now();
const redis = await startRedis({ nodes: Math.max(5, ...NODE_COUNTS) });
try {
  const results: Record<string, unknown> = {};
  if (scenarios.has('uncontended'))
    results.uncontended = await uncontended(redis, {
      seconds,
      reps,
      warmUpSeconds,
      ...(only ? { only } : {}),
    });
  if (scenarios.has('uncontended-slow')) {
    const ports = redis.urls.map((url) => Number(new URL(url).port));
    const network = await delayedNetwork(ports, replyDelayMs);
    try {
      results.uncontendedSlow = await uncontended(redis, {
        seconds,
        reps,
        warmUpSeconds,
        clientUrls: network.urls,
        ...(only ? { only } : {}),
      });
    } finally {
      network.stop();
    }
  }
  if (scenarios.has('uncontended-paced')) {
    results.uncontendedPaced = await uncontended(redis, {
      seconds,
      reps,
      warmUpSeconds,
      pauseMs,
      ...(only ? { only } : {}),
    });
  }
  if (scenarios.has('cost'))
    results.cost = await cost(redis, { warmUpSeconds, ...(only ? { only } : {}) });
  if (scenarios.has('profile'))
    results.profile = await profile(redis, { seconds, warmUpSeconds, ...(only ? { only } : {}) });
  if (scenarios.has('contention'))
    results.contention = await contention(redis, { seconds, reps, ...(only ? { only } : {}) });
  if (scenarios.has('faults'))
    results.faults = await faults(redis, { seconds, reps, ...(only ? { only } : {}) });
  if (scenarios.has('memory'))
    results.memory = await memory(redis, { reps, ...(only ? { only } : {}) });
  if (scenarios.has('waiters')) results.waiters = await waiters(redis, { seconds, reps });
  if (scenarios.has('nodes')) results.nodes = await nodes(redis, { seconds, reps });
  if (scenarios.has('semaphore'))
    results.semaphore = await semaphore(redis, { seconds, reps, ...(only ? { only } : {}) });
  if (scenarios.has('cluster-wake-ups')) results.clusterWakeUps = await clusterWakeUps();
  const durationS = Math.round((performance.now() - startedAt) / 1_000);
  const sourceAtEnd = sourceState();
  const source =
    sourceAtEnd === sourceAtStart
      ? sourceAtStart
      : `WARNING, src/ changed during the run: ${sourceAtStart}, then ${sourceAtEnd}`;
  await report(results, {
    seconds,
    warmUpSeconds,
    reps,
    durationS,
    source,
    client,
    replyDelayMs,
    pauseMs,
  });
  process.stderr.write(`bench finished in ${durationS} s\n`);
} finally {
  await redis.stop();
}
