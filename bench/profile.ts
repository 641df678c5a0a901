/**
 * Scenario `profile`: where the client's CPU goes in one uncontended acquire + release, one
 * at a time, on 1 node and on 5. Each contender runs alone in a child process under V8's
 * sampling profiler (bench/cycle-worker.ts); self time is summed by layer
 * (bench/profile-layers.ts), and the process's measured CPU is shared out in those
 * proportions. distlock, and the floor for reference (its own code is bench harness).
 */
import type { RedisNodes } from '../src/testing/index.js';
import type { ContenderSpec } from './contenders.js';
import { contendersOn, inChild } from './cost.js';
import { IDLE, LAYERS } from './profile-layers.js';
import { table } from './report.js';
import { round } from './stats.js';

export interface ProfileRow {
  readonly contender: string;
  readonly nodes: number;
  readonly cycles: number;
  readonly wallUsPerCycle: number;
  /** The process's CPU per cycle (user + system, µs), as measured. */
  readonly cpuUsPerCycle: number;
  /** That CPU by layer, in the proportions of the samples taken outside idle, µs. */
  readonly layerCpuUsPerCycle: Record<string, number>;
  /** Share of the window's samples that found the process idle. */
  readonly idleShare: number;
}

const PROFILED = ['distlock', 'distlock baseline', 'ioredis floor'];
/**
 * Finer than V8's default of 1 ms (a cycle is a few hundred µs), not so fine that sampling
 * becomes much of the process's work (at 100 µs it doubled the cycle's time).
 */
const SAMPLE_INTERVAL_US = 500;

export async function profile(
  redis: RedisNodes,
  options: { seconds: number; warmUpSeconds: number; only?: (spec: ContenderSpec) => boolean },
): Promise<ProfileRow[]> {
  const rows: ProfileRow[] = [];
  for (const nodes of [1, 5]) {
    for (const spec of contendersOn(PROFILED, nodes, options.only)) {
      const report = await inChild({
        type: 'setup',
        contender: spec.name,
        urls: redis.urls.slice(0, nodes),
        warmUpSeconds: options.warmUpSeconds,
        mode: 'profile',
        cycles: 0,
        seconds: options.seconds,
        sampleIntervalUs: SAMPLE_INTERVAL_US,
      });
      if (report?.type !== 'layers' || report.cycles === 0) {
        process.stderr.write(`  profile: ${spec.name} on ${nodes} node(s) reported nothing\n`);
        continue;
      }
      const sampled = Object.values(report.selfUs).reduce((a, b) => a + b, 0);
      const busy = sampled - (report.selfUs[IDLE] ?? 0);
      const cpuUsPerCycle = report.cpuUs / report.cycles;
      rows.push({
        contender: spec.name,
        nodes,
        cycles: report.cycles,
        wallUsPerCycle: round(report.wallUs / report.cycles, 1),
        cpuUsPerCycle: round(cpuUsPerCycle, 1),
        layerCpuUsPerCycle: Object.fromEntries(
          Object.entries(report.selfUs)
            .filter(([layer]) => layer !== IDLE)
            .map(([layer, us]) => [layer, round((us / busy) * cpuUsPerCycle, 1)]),
        ),
        idleShare: round((report.selfUs[IDLE] ?? 0) / sampled, 2),
      });
    }
    process.stderr.write(`  profile: ${nodes} node(s) done\n`);
  }
  return rows;
}

export function profileTable(
  rows: readonly ProfileRow[],
  seconds: number,
  warmUpSeconds: number,
): string {
  const seen = new Set(rows.flatMap((r) => Object.keys(r.layerCpuUsPerCycle)));
  const layers = [
    ...LAYERS.filter((l) => seen.has(l)),
    ...[...seen].filter((l) => !(LAYERS as readonly string[]).includes(l)),
  ];
  const out = [
    ...layers.map((layer) => [layer, ...rows.map((r) => r.layerCpuUsPerCycle[layer] ?? 0)]),
    ['**client CPU, measured**', ...rows.map((r) => `**${r.cpuUsPerCycle}**`)],
    ['wall time per cycle', ...rows.map((r) => r.wallUsPerCycle)],
    ['samples found idle', ...rows.map((r) => `${Math.round(r.idleShare * 100)}%`)],
    ['cycles profiled', ...rows.map((r) => r.cycles)],
  ];
  const column = (r: ProfileRow) => `${r.contender}, ${r.nodes} node${r.nodes === 1 ? '' : 's'}`;
  return `### CPU profile of one cycle, by layer (client CPU µs per cycle)

One acquire + release at a time on one key for ${seconds} s (after ${warmUpSeconds} s of them), each library alone in a child
process under V8's sampling profiler (a sample every ${SAMPLE_INTERVAL_US} µs; the profiler's
own cost is in the figures). The process's CPU (user + system, measured) is shared out in
the proportions of the samples that did not find it idle, by where the sampled function
lives: distlock's build mapped to its source folders (through source maps), ioredis with the
packages it runs on, the bench harness (the floor's code is the harness), Node's own
JavaScript (\`node:*\`), the native side of socket writes (the system call; on loopback it
also runs the receiving side's kernel work), other V8 built-ins and native functions, native
work outside JavaScript (V8's \`(program)\`), and the garbage collector. Samples are
taken in wall time: on a busy machine a descheduled process is sampled where it stopped.

${table(['layer', ...rows.map(column)], out)}`;
}
