/**
 * Child process of the uncontended and `nodes` scenarios: one contender, alone in its
 * process, runs one cell's acquire + release cycles on distinct keys (see `cycles` in
 * uncontended.ts) and reports cycles/s, its CPU and the servers' work per cycle, and the
 * latency of a cycle. With `pauseMs` (one cycle at a time only), each cycle is followed by a
 * pause of that long, which cycles/s leave out: the time of a cycle as it runs after an idle
 * moment.
 *
 *   parent → child  `setup`  the contender, its nodes, concurrency and seconds
 *   child → parent  `cell`   what the run measured
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parentMessage, sendToParent } from './child-workers.js';
import { closeClients, openClients } from './clients.js';
import { CONTENDERS } from './contenders.js';
import { ServerStats, workBetween } from './server-stats.js';
import { nowMs, percentile } from './stats.js';
import type { CellReport, CellSetup } from './uncontended.js';

const TTL_MS = 10_000;

const setup = await parentMessage<CellSetup>();
const spec = CONTENDERS.find((c) => c.name === setup.contender);
if (!spec) throw new Error(`no contender named ${setup.contender}`);
const { concurrency, seconds, warmUpSeconds, pauseMs = 0 } = setup;
// The pauses are taken out of one lane's elapsed time: with more lanes they would overlap.
if (pauseMs > 0 && concurrency !== 1) throw new Error('pauseMs is for one cycle at a time');
const clients = await openClients(setup.clientUrls);
const serverStats = await ServerStats.open(setup.urls);
const lib = spec.make(clients, 'defaults');
const latencies: number[] = [];
const tag = `${spec.name.replace(/\W+/g, '')}:${process.pid}`;
// Loads scripts and settles connections; then V8 optimizes during the timed warm-up.
for (let i = 0; i < 20; i++) await (await lib.acquire(`bench:warm:${tag}:${i}`, TTL_MS)).release();
let failures = 0;
/** The time spent in pauses between cycles (see `pauseMs`). */
let pausedMs = 0;
const run = (until: number, keys: string, record: number[]) =>
  Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      const key = `${keys}:${worker}`;
      while (nowMs() < until) {
        const t0 = nowMs();
        try {
          const held = await lib.acquire(key, TTL_MS);
          await held.release();
          record.push(nowMs() - t0);
        } catch {
          failures++; // a library that gave up (its own acquire timeout): no cycle
        }
        if (pauseMs > 0) {
          const pausedAt = nowMs();
          await sleep(pauseMs);
          pausedMs += nowMs() - pausedAt;
        }
      }
    }),
  );
await run(nowMs() + warmUpSeconds * 1_000, `bench:warm:${tag}`, []);
const serverAtStart = await serverStats.read();
const started = nowMs();
const cpuAtStart = process.cpuUsage();
pausedMs = 0;
await run(started + seconds * 1_000, `bench:u:${tag}`, latencies);
const elapsed = (nowMs() - started - pausedMs) / 1_000;
const cpu = process.cpuUsage(cpuAtStart);
const server = workBetween(serverAtStart, await serverStats.read());
serverStats.close();
await lib.close();
closeClients(clients);
if (failures > 0) {
  process.stderr.write(`  ${spec.name}: ${failures} acquire+release cycle(s) failed\n`);
}
await sendToParent<CellReport>({
  type: 'cell',
  run: {
    cyclesPerSec: latencies.length / elapsed,
    cpuUsPerCycle: (cpu.user + cpu.system) / latencies.length,
    server,
    cycles: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  },
});
process.exit(0);
