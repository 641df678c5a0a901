/**
 * Scenario 6: how the cost grows with the number of nodes. The uncontended cycle (acquire +
 * release on distinct keys) of distlock and of the ioredis floor on 1, 3, 5 and 7 nodes, at
 * concurrency 1 and 64; each figure is also given relative to the same library on one node.
 */
import type { RedisNodes } from '../src/testing/index.js';
import { contender } from './contenders.js';
import { median, round } from './stats.js';
import { cycles } from './uncontended.js';

export interface NodesRow {
  readonly contender: string;
  readonly nodes: number;
  readonly concurrency: number;
  readonly cyclesPerSec: number;
  readonly p50Ms: number;
  /** cycles/s on this many nodes divided by cycles/s on one node. */
  readonly vsOneNode: number;
}

export const NODE_COUNTS = [1, 3, 5, 7];

export async function nodes(
  redis: RedisNodes,
  options: { seconds: number; reps: number },
): Promise<NodesRow[]> {
  const rows: NodesRow[] = [];
  for (const concurrency of [1, 64]) {
    for (const spec of [contender('ioredis floor'), contender('distlock')]) {
      let oneNode = 0;
      for (const count of NODE_COUNTS) {
        const runs = [];
        for (let rep = 0; rep < options.reps; rep++) {
          runs.push(await cycles(spec, redis.urls.slice(0, count), concurrency, options.seconds));
        }
        const cyclesPerSec = median(runs.map((r) => r.cyclesPerSec));
        if (count === 1) oneNode = cyclesPerSec;
        rows.push({
          contender: spec.name,
          nodes: count,
          concurrency,
          cyclesPerSec: round(cyclesPerSec, 0),
          p50Ms: round(median(runs.map((r) => r.p50Ms)), 3),
          vsOneNode: round(cyclesPerSec / oneNode, 2),
        });
      }
    }
    process.stderr.write(`  nodes: concurrency ${concurrency} done\n`);
  }
  return rows;
}
