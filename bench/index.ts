/**
 * `npm run bench`: distlock against the libraries users would otherwise pick, on the same
 * redis-server processes, in one run. Figures are medians over repetitions; compare ratios,
 * which hold within a run, rather than absolute numbers, which drift on shared machines.
 *
 *   npm run bench                              every scenario
 *   npm run bench -- --scenario uncontended    one scenario (uncontended|contention|faults|memory)
 *   npm run bench -- --seconds 1 --reps 3      shorter or longer runs
 *   npm run bench -- --contender distlock --contender floor    some contenders only
 */
import { parseArgs } from 'node:util';
import { startRedis } from '../src/testing/index.js';
import type { ContenderSpec } from './contenders.js';
import { report } from './report.js';
import { uncontended } from './uncontended.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', multiple: true },
    seconds: { type: 'string', default: '1.5' },
    reps: { type: 'string', default: '3' },
    contender: { type: 'string', multiple: true },
  },
});
const scenarios = new Set(values.scenario ?? ['uncontended', 'contention', 'faults', 'memory']);
const seconds = Number(values.seconds);
const reps = Number(values.reps);
const only = values.contender
  ? (spec: ContenderSpec) =>
      values.contender?.some((n) => spec.name.toLowerCase().includes(n.toLowerCase())) ?? true
  : undefined;

const redis = await startRedis({ nodes: 5 });
try {
  const results: Record<string, unknown> = {};
  if (scenarios.has('uncontended'))
    results.uncontended = await uncontended(redis, { seconds, reps, ...(only ? { only } : {}) });
  await report(results, { seconds, reps });
} finally {
  await redis.stop();
}
