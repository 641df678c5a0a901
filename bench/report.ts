import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { type ClusterWakeUpsRow, clusterWakeUpsTable } from './cluster-wake-ups.js';
import type { ContentionRow } from './contention.js';
import { type CostRow, costTable } from './cost.js';
import type { FaultRow } from './faults.js';
import type { MemoryRow } from './memory.js';
import type { NodesRow } from './nodes.js';
import { type ProfileRow, profileTable } from './profile.js';
import type { SemaphoreRow } from './semaphore.js';
import type { UncontendedRow } from './uncontended.js';
import type { WaitersRow } from './waiters.js';

const FLOOR = 'ioredis floor';
const HANDOFF_FLOOR = 'ioredis hand-off floor';
/** distlock's rows, in any mode ('distlock', 'distlock fair'). */
function isOurs(contender: string): boolean {
  return contender === 'distlock' || contender.startsWith('distlock ');
}

/** Prints the tables, and writes them (with the raw figures) under bench/results/. */
export async function report(
  results: Record<string, unknown>,
  run: {
    seconds: number;
    warmUpSeconds: number;
    reps: number;
    durationS: number;
    source: string;
    client: string;
    /** How long the `uncontended-slow` scenario's proxies held each reply back. */
    replyDelayMs: number;
    /** The pause after each cycle in the `uncontended-paced` scenario. */
    pauseMs: number;
  },
): Promise<void> {
  const meta = {
    date: new Date().toISOString(),
    redis: execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim().split(' ')[2],
    node: process.version,
    machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
    ...run,
  };
  const sections: string[] = [
    `Run ${meta.date.slice(0, 10)}, Redis ${meta.redis?.replace('v=', '')}, Node ${meta.node}, ${meta.machine}; every contender on ${run.client} clients with default options; median of ${run.reps} runs of ${run.seconds} s, each after ${run.warmUpSeconds} s of warm-up; whole run ${run.durationS} s; ${run.source}.`,
  ];
  if (results.uncontended) sections.push(uncontendedTable(results.uncontended as UncontendedRow[]));
  if (results.uncontendedSlow) {
    const rows = results.uncontendedSlow as UncontendedRow[];
    sections.push(uncontendedTable(rows, { replyDelayMs: run.replyDelayMs }));
  }
  if (results.uncontendedPaced) {
    const rows = results.uncontendedPaced as UncontendedRow[];
    sections.push(uncontendedTable(rows, { pauseMs: run.pauseMs }));
  }
  if (results.cost) sections.push(costTable(results.cost as CostRow[]));
  if (results.profile)
    sections.push(profileTable(results.profile as ProfileRow[], run.seconds, run.warmUpSeconds));
  if (results.contention) sections.push(contentionTable(results.contention as ContentionRow[]));
  if (results.faults) sections.push(faultsTable(results.faults as FaultRow[]));
  if (results.memory) sections.push(memoryTable(results.memory as MemoryRow[]));
  if (results.waiters) sections.push(waitersTable(results.waiters as WaitersRow[]));
  if (results.nodes) sections.push(nodesTable(results.nodes as NodesRow[]));
  if (results.semaphore) sections.push(semaphoreTable(results.semaphore as SemaphoreRow[]));
  if (results.clusterWakeUps) {
    sections.push(clusterWakeUpsTable(results.clusterWakeUps as ClusterWakeUpsRow[]));
  }
  const markdown = `${sections.join('\n\n')}\n`;
  console.log(`\n${markdown}`);
  mkdirSync('bench/results', { recursive: true });
  const stamp = meta.date.replace(/[:.]/g, '-');
  writeFileSync(`bench/results/${stamp}.json`, `${JSON.stringify({ meta, results }, null, 2)}\n`);
  writeFileSync('bench/results/latest.json', `${JSON.stringify({ meta, results }, null, 2)}\n`);
  writeFileSync('bench/results/latest.md', markdown);
}

/** Markdown table from rows of cells. */
export function table(header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const line = (cells: readonly unknown[]) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** `value / reference`, as `0.97×`. */
export function ratio(value: number, reference: number | undefined): string {
  return reference ? `${(value / reference).toFixed(2)}×` : '–';
}

function uncontendedTable(
  rows: readonly UncontendedRow[],
  regime: { replyDelayMs?: number; pauseMs?: number } = {},
): string {
  const { replyDelayMs, pauseMs } = regime;
  const out: (string | number)[][] = [];
  const verdicts: string[] = [];
  const cells = new Set(rows.map((r) => `${r.nodes}/${r.concurrency}`));
  for (const cell of cells) {
    const inCell = rows.filter((r) => `${r.nodes}/${r.concurrency}` === cell);
    const floorRow = inCell.find((r) => r.contender === FLOOR);
    const bestPeer = best(inCell, (r) => r.cyclesPerSec, 'max');
    for (const r of inCell) {
      out.push([
        r.nodes,
        r.concurrency,
        name(r.contender),
        r.cyclesPerSec,
        ratio(r.cyclesPerSec, floorRow?.cyclesPerSec),
        ratio(r.cyclesPerSec, bestPeer),
        r.cpuUsPerCycle,
        // Floor CPU / ours: like the others, higher is better.
        floorRow ? ratio(floorRow.cpuUsPerCycle, r.cpuUsPerCycle) : '–',
        r.serverUsPerCycle,
        r.serverCallsPerCycle,
        r.serverCpuUsPerCycle,
        r.p50Ms,
        r.p99Ms,
      ]);
    }
    const ours = inCell.find((r) => r.contender === 'distlock');
    const bestPeerRow = inCell.find((r) => r.cyclesPerSec === bestPeer && isPeer(r.contender));
    if (ours) verdicts.push(uncontendedVerdict(ours, bestPeerRow, floorRow));
  }
  const headings = ['nodes', 'conc.', 'library', 'cycles/s', 'vs floor', 'vs best peer'];
  const title = replyDelayMs
    ? `### 1b. Uncontended acquire + release over a slow network (replies delayed ${replyDelayMs} ms)

Each node behind a TCP proxy in a process of its own that holds every reply back by
${replyDelayMs} ms (the fault proxy's \`delay\` mode), as a network between machines would: the
per-operation client work that dominates on loopback hides behind the wait here.`
    : pauseMs
      ? `### 1c. Uncontended acquire + release, ${pauseMs} ms apart (one at a time)

Each cycle followed by a pause of ${pauseMs} ms, as a worker that holds its lock that long; the
pauses are left out of cycles/s, and their timers are in every contender's client CPU. After
an idle moment the code and data of a cycle are no longer in the caches: this is what an
operation costs at a few hundred locks a second, where back to back (table 1) hides it.`
      : '### 1. Uncontended acquire + release (distinct keys)';
  return `${title}

Client CPU: what the client process spent per cycle (user + system), the Redis servers' work
excluded; CPU vs floor is the floor's client CPU per cycle over this one's (higher is better).
Server, summed over the nodes and read on separate connections: cmd µs, the commands' time
from \`INFO commandstats\` (a command run by a script counts in the script's time and again in
its own); cmds, the commands run (those inside scripts included); CPU µs, the main thread's CPU
(\`INFO cpu\`: commands, reading requests and writing replies).

${table(
  [
    ...headings,
    ...['client CPU µs/cycle', 'CPU vs floor', 'server cmd µs/cycle', 'server cmds/cycle'],
    ...['server CPU µs/cycle', 'p50 ms', 'p99 ms'],
  ],
  out,
)}

Against the goals (every cell >= 1.00× the best peer's cycles/s; one at a time also >= 0.90×
the floor's):

${verdicts.join('\n')}`;
}

/** One line: distlock in one cell against the goals. */
function uncontendedVerdict(
  ours: UncontendedRow,
  bestPeer: UncontendedRow | undefined,
  floor: UncontendedRow | undefined,
): string {
  const cell = `${ours.nodes} node${ours.nodes === 1 ? '' : 's'} × ${ours.concurrency}`;
  const checks: string[] = [];
  if (bestPeer) {
    const r = ours.cyclesPerSec / bestPeer.cyclesPerSec;
    checks.push(
      `${r.toFixed(2)}× the best peer, ${bestPeer.contender} (${r >= 1 ? 'met' : 'MISSED'}, goal 1.00×)`,
    );
  }
  if (floor) {
    const r = ours.cyclesPerSec / floor.cyclesPerSec;
    checks.push(
      ours.concurrency === 1
        ? `${r.toFixed(2)}× floor (${r >= 0.9 ? 'met' : 'MISSED'}, goal 0.90×)`
        : `${r.toFixed(2)}× floor (no goal)`,
    );
  }
  return `- ${cell}: ${checks.length > 0 ? checks.join('; ') : 'no peer or floor in this run'}`;
}

function name(contender: string): string {
  return isOurs(contender) ? `**${contender}**` : contender;
}

/** The best figure among the peers (neither the floor nor distlock); undefined if none ran. */
/** Another library: not distlock, nor a floor (a reference row). */
function isPeer(contender: string): boolean {
  return contender !== FLOOR && contender !== HANDOFF_FLOOR && !isOurs(contender);
}

function best<T extends { contender: string }>(
  rows: readonly T[],
  figure: (row: T) => number,
  better: 'max' | 'min',
): number | undefined {
  const peers = rows.filter((r) => isPeer(r.contender)).map(figure);
  if (peers.length === 0) return undefined;
  return better === 'max' ? Math.max(...peers) : Math.min(...peers);
}

function contentionTable(rows: readonly ContentionRow[]): string {
  const out = rows.map((r) => {
    const sameTuning = rows.filter((p) => p.tuning === r.tuning);
    return [
      name(r.contender),
      r.tuning,
      r.acquisitionsPerSec,
      ratio(
        r.acquisitionsPerSec,
        best(sameTuning, (p) => p.acquisitionsPerSec, 'max'),
      ),
      r.waitP50Ms,
      r.waitP99Ms,
      r.waitMaxMs,
      r.handoffP50Ms,
      ratio(
        r.handoffP50Ms,
        best(sameTuning, (p) => p.handoffP50Ms, 'min'),
      ),
      r.handoffP99Ms,
      r.otherWorkerHandoffP50Ms,
      r.otherWorkerHandoffP99Ms,
      `${(r.sameWorkerShare * 100).toFixed(1)}%`,
      r.jain,
      `${r.minPerWorker}–${r.maxPerWorker}`,
      r.clientCpuUsPerAcquisition,
      r.serverCpuUsPerAcquisition,
      r.acquireFailures,
      r.releaseFailures,
      r.overlaps,
      r.unreportedWorkers,
    ];
  });
  return `### 2. Contention: 10 workers in 5 processes on one key, 1 node, hold 1 ms

Hand-off gap: from the previous holder starting its release to the next holder having the lock.
To other: the same gap, counting only hand-offs to a different worker than the releaser.
Same worker: share of hand-offs won by the worker that just released (1/10 would be even odds).
Ratios are to the best peer with the same tuning (acq/s: higher is better; hand-off: lower is
better). The floor retries every 1 ms whatever the tuning: a reference row, not a peer. The
hand-off floor is the least work a fair hand-off can do (line, hand-over in the release
script, one confirming round trip; no timeouts or crash handling): also a reference row.
Client and server CPU: µs per acquisition, the five processes' user + system time over their
workers' loops (waiters' work included) and the Redis main thread's (\`INFO cpu\`) until every
process reported; with the acquisitions' pace they show how much of the machine's cores the
run kept busy (NaN when a process did not report). Overlaps (next acquired before previous
began releasing) must be 0; unreported = workers whose process was killed 5 s after the deadline.

${table(
  [
    ...['library', 'tuning', 'acq/s', 'vs best peer', 'wait p50 ms', 'wait p99 ms'],
    ...['wait max ms', 'hand-off p50 ms', 'vs best peer', 'hand-off p99 ms'],
    ...['to other p50 ms', 'to other p99 ms', 'same worker'],
    ...['Jain', 'per worker', 'client CPU µs/acq', 'server CPU µs/acq'],
    ...['acq. failures', 'rel. failures', 'overlaps', 'unreported'],
  ],
  out,
)}`;
}

function faultsTable(rows: readonly FaultRow[]): string {
  const out = rows.map((r) => {
    const sameFault = rows.filter((p) => p.fault === r.fault);
    return [
      r.fault,
      name(r.contender),
      r.cycles,
      r.cyclesPerSec,
      ratio(
        r.cyclesPerSec,
        best(sameFault, (p) => p.cyclesPerSec, 'max'),
      ),
      r.failures,
      r.stuck,
      r.p50Ms,
      r.p99Ms,
      r.maxMs,
      r.lastSuccessS,
      r.maxPendingOnFaultedNode,
      Math.round(r.heapGrowthBytes / 1024),
    ];
  });
  return `### 3. One of 5 nodes failing: acquire + release on distinct keys, concurrency 4

Default settings, fresh clients per library. A cycle over 5 s counts as stuck and is abandoned.
Last success: seconds from the fault to the last completed cycle (0: none completed). Pending:
most commands queued on the faulted node's client; heap: peak growth over the run, no forced GC.
The floor has no timeouts or quorum: a reference row, not a peer.

${table(
  [
    ...['fault', 'library', 'cycles', 'cycles/s', 'vs best peer', 'failures', 'stuck'],
    ...['p50 ms', 'p99 ms', 'max ms', 'last success s', 'max pending', 'heap growth KiB'],
  ],
  out,
)}`;
}

function memoryTable(rows: readonly MemoryRow[]): string {
  const redisBest = best(rows, (r) => r.redisBytesPerLock, 'min');
  const heapBest = best(rows, (r) => r.heapBytesPerLock, 'min');
  const out = rows.map((r) => [
    name(r.contender),
    r.locks,
    r.redisBytesPerLock,
    ratio(r.redisBytesPerLock, redisBest),
    r.heapBytesPerLock,
    ratio(r.heapBytesPerLock, heapBest),
  ]);
  return `### 4. Memory per held lock (1 node, locks held on distinct keys, 60 s TTL)

Redis: \`used_memory\` growth; client: \`heapUsed\` growth after a forced GC, both divided by
the number of locks held. Lower is better; ratios are to the leanest peer.

${table(['library', 'locks', 'Redis B/lock', 'vs best peer', 'heap B/lock', 'vs best peer'], out)}`;
}

function waitersTable(rows: readonly WaitersRow[]): string {
  const out = rows.map((r) => [
    r.nodes,
    r.fair ? 'fair' : 'plain',
    r.waiters,
    r.requestsPerWaiterPerSec,
    r.commandsPerWaiterPerSec,
    r.heapBytesPerWaiter,
  ]);
  return `### 5. Waiting: N acquirers of one locker wait for one held key (distlock)

Per waiter per second, summed over the nodes (bounded: neither may grow with the number of
waiters): the requests the waiters sent (script calls: a waiter in line sends nothing else),
and the commands Redis ran for them (\`total_commands_processed\`, which counts the commands
inside scripts too). Then \`heapUsed\` growth per waiting acquirer after a forced GC.

${table(['nodes', 'mode', 'waiters', 'requests/waiter/s', 'commands/waiter/s', 'heap B/waiter'], out)}`;
}

function nodesTable(rows: readonly NodesRow[]): string {
  const out = rows.map((r) => [
    r.concurrency,
    name(r.contender),
    r.nodes,
    r.cyclesPerSec,
    `${r.vsOneNode.toFixed(2)}×`,
    r.p50Ms,
  ]);
  return `### 6. Cost growth with nodes: uncontended acquire + release (distinct keys)

cycles/s on 1, 3, 5 and 7 nodes, and relative to the same library on one node.

${table(['conc.', 'library', 'nodes', 'cycles/s', 'vs 1 node', 'p50 ms'], out)}`;
}

function semaphoreTable(rows: readonly SemaphoreRow[]): string {
  const out = rows.map((r) => {
    // redis-semaphore on the same nodes, measured in the same run.
    const peer = rows.find((p) => p.nodes === r.nodes && !isOurs(p.contender));
    return [
      r.nodes,
      name(r.contender),
      r.acquisitionsPerSec,
      ratio(r.acquisitionsPerSec, peer?.acquisitionsPerSec),
      r.waitP50Ms,
      ratio(r.waitP50Ms, peer?.waitP50Ms),
      r.waitP99Ms,
      ratio(r.waitP99Ms, peer?.waitP99Ms),
      r.waitMaxMs,
      `${r.mostHoldersEver} of ${r.permits}`,
      r.overPermitsTotal,
      r.jain,
      `${r.minPerWorker}–${r.maxPerWorker}`,
      r.acquireFailures,
      r.releaseFailures,
      r.abandoned,
      r.unreportedWorkers,
    ];
  });
  return `### 7. Semaphore: 16 workers in 4 processes, 4 permits, 1 node and 3, hold 2 ms

Each worker has its own clients and its own instance of the library, and loops on one
semaphore: acquire (10 s lease, up to 30 s wait), hold 2 ms, release. Each library with its
default retry settings (distlock: \`retryDelayMs\` 100, a release hands the permit to the first waiter; redis-semaphore:
\`retryInterval\` 10, \`refreshInterval\` 8 s, never reached). Ratios are to redis-semaphore on the same nodes
(\`Semaphore\` on 1 node, \`RedlockSemaphore\` on 3): acq/s higher is better, waits lower.
Most holders: the most permits held at one instant (from a holder's acquire resolving to its
release starting, over all workers), the highest of the runs; above: acquisitions that took it
over the permits, summed over the runs. It must never exceed the permits.
Abandoned: waits given up 3 s after the deadline; unreported: workers whose process was killed.

${table(
  [
    ...['nodes', 'library', 'acq/s', 'vs redis-semaphore', 'wait p50 ms', 'vs redis-semaphore'],
    ...['wait p99 ms', 'vs redis-semaphore', 'wait max ms', 'most holders', 'above', 'Jain'],
    ...['per worker', 'acq. failures', 'rel. failures', 'abandoned', 'unreported'],
  ],
  out,
)}`;
}
