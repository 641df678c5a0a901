/**
 * Scenario `cost`: what one uncontended acquire + release creates in the client process, one
 * cycle at a time, on 1 node and on 5: promises, next-tick callbacks, timers and immediates
 * (`async_hooks` init, by type, hooked for the measured cycles only), and event-loop turns
 * (libuv's loop count); and the client CPU per cycle, also in a process where V8 never
 * optimizes (`--no-opt`), as at a few locks a second. Each contender runs alone in a child
 * process (bench/cycle-worker.ts), after a warm-up.
 */
import type { RedisNodes } from '../src/testing/index.js';
import { awaitMessage, forkWorkers } from './child-workers.js';
import { CONTENDERS, type ContenderSpec } from './contenders.js';
import type { CycleReport, CycleSetup } from './cycle-worker.js';
import { table } from './report.js';
import { round } from './stats.js';

export interface CostRow {
  readonly contender: string;
  readonly nodes: number;
  readonly cycles: number;
  readonly warmUpSeconds: number;
  /** Per cycle. */
  readonly promises: number;
  readonly nextTicks: number;
  readonly timers: number;
  readonly immediates: number;
  readonly otherResources: number;
  readonly loopTurns: number;
  /** The client's CPU per cycle (µs, user + system), and in a process run with `--no-opt`. */
  readonly cpuUs: number;
  readonly cpuUsUnoptimized: number | undefined;
  /** Every resource type seen, per cycle. */
  readonly resources: Record<string, number>;
}

/** distlock, the floor and the best peers at 1 at a time. */
export const COST_CONTENDERS = [
  'ioredis floor',
  'distlock',
  'distlock baseline',
  'redis-semaphore Mutex',
  'redis-semaphore RedlockMutex',
  'redlock 5.0.0-beta.2',
];

/** The contenders of `names` that exist in this run and can run on `nodes` nodes. */
export function contendersOn(
  names: readonly string[],
  nodes: number,
  only?: (spec: ContenderSpec) => boolean,
): ContenderSpec[] {
  return names
    .map((n) => CONTENDERS.find((c) => c.name === n))
    .filter((s): s is ContenderSpec => s !== undefined)
    .filter((s) => (nodes === 1 ? s.singleNode : s.multiNode) && (only?.(s) ?? true));
}

/**
 * Runs `setup` in a child of its own (with `nodeFlags` given to Node); undefined if the child
 * fails or takes too long.
 */
export async function inChild(
  setup: CycleSetup,
  nodeFlags: readonly string[] = [],
): Promise<CycleReport | undefined> {
  const [child] = forkWorkers(new URL('./cycle-worker.ts', import.meta.url), 1, nodeFlags);
  if (!child) return undefined;
  child.send(setup);
  const report = await awaitMessage<CycleReport>(
    child,
    setup.mode === 'count' ? 'counts' : 'layers',
    120_000,
  );
  if (child.exitCode === null) child.kill();
  return report;
}

export async function cost(
  redis: RedisNodes,
  options: { cycles?: number; warmUpSeconds: number; only?: (spec: ContenderSpec) => boolean },
): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  const cycles = options.cycles ?? 2_000;
  for (const nodes of [1, 5]) {
    for (const spec of contendersOn(COST_CONTENDERS, nodes, options.only)) {
      const setup: CycleSetup = {
        type: 'setup',
        contender: spec.name,
        urls: redis.urls.slice(0, nodes),
        warmUpSeconds: options.warmUpSeconds,
        mode: 'count',
        cycles,
        seconds: 0,
        sampleIntervalUs: 0,
      };
      const report = await inChild(setup);
      const unoptimized = await inChild(setup, ['--no-opt']);
      if (report?.type !== 'counts') {
        process.stderr.write(`  cost: ${spec.name} on ${nodes} node(s) reported nothing\n`);
        continue;
      }
      const per = (n: number | undefined) => round((n ?? 0) / report.cycles, 2);
      const { PROMISE, TickObject, Timeout, Immediate, ...other } = report.resources;
      rows.push({
        contender: spec.name,
        nodes,
        cycles: report.cycles,
        promises: per(PROMISE),
        nextTicks: per(TickObject),
        timers: per(Timeout),
        immediates: per(Immediate),
        otherResources: per(Object.values(other).reduce((a, b) => a + b, 0)),
        loopTurns: per(report.loopTurns),
        cpuUs: round(report.cpuUs / report.cycles, 1),
        cpuUsUnoptimized:
          unoptimized?.type === 'counts'
            ? round(unoptimized.cpuUs / unoptimized.cycles, 1)
            : undefined,
        warmUpSeconds: options.warmUpSeconds,
        resources: Object.fromEntries(
          Object.entries(report.resources).map(([type, n]) => [type, per(n)]),
        ),
      });
    }
    process.stderr.write(`  cost: ${nodes} node(s) done\n`);
  }
  return rows;
}

export function costTable(rows: readonly CostRow[]): string {
  const out = rows.map((r) => [
    r.nodes,
    r.contender === 'distlock' || r.contender.startsWith('distlock ')
      ? `**${r.contender}**`
      : r.contender,
    r.promises,
    r.nextTicks,
    r.timers,
    r.immediates,
    r.otherResources,
    r.loopTurns,
    r.cpuUs,
    r.cpuUsUnoptimized ?? '–',
  ]);
  const cycles = rows[0]?.cycles ?? 0;
  const warmUp = rows[0]?.warmUpSeconds ?? 0;
  return `### Cost of one cycle in the client: what an acquire + release creates

One cycle at a time on one key, ${cycles} cycles after ${warmUp} s of them, each library alone in
a child process. Per cycle: the asynchronous resources created (\`async_hooks\` init, hooked
for the measured cycles only, the harness's own loop included alike for all): promises,
\`process.nextTick\` callbacks, timers (\`Timeout\`), immediates, every other type (e.g.
\`crypto.randomBytes\` requests; the JSON results list them by type); and event-loop turns
(libuv's \`loopCount\`). Then the client's CPU per cycle (user + system) over as many cycles
more, not hooked, and the same in a process run with \`--no-opt\`: V8 never optimizes a
library that locks a few times a second (nor, in a few seconds, one that waits its turn 100
times a second, as in the contention scenario), so this is what a cycle costs there; on
loopback the system calls of the cycle's requests are most of the first figure. Lower is better.

${table(
  [
    ...['nodes', 'library', 'promises', 'next ticks', 'timers', 'immediates', 'other'],
    ...['loop turns', 'CPU µs', 'CPU µs, --no-opt'],
  ],
  out,
)}`;
}
