/**
 * Child process of the `cost` and `profile` scenarios: one contender, alone in its process,
 * runs acquire + release cycles one at a time on one key, after a warm-up, and reports what a
 * cycle cost it. Alone, so that nothing else in the process adds to the counts.
 *
 *   parent → child  `setup`   which contender, nodes, and what to measure
 *   child → parent  `counts`  (mode `count`) resources created and event-loop turns
 *   child → parent  `layers`  (mode `profile`) CPU profile self time by layer
 */
import { createHook } from 'node:async_hooks';
import { Session } from 'node:inspector/promises';
import { parentMessage, sendToParent } from './child-workers.js';
import { closeClients, openClients } from './clients.js';
import { CONTENDERS, type Contender } from './contenders.js';
import { IDLE, layerOf } from './profile-layers.js';
import { nowMs } from './stats.js';

export interface CycleSetup {
  readonly type: 'setup';
  readonly contender: string;
  readonly urls: readonly string[];
  readonly mode: 'count' | 'profile';
  /** Seconds of cycles before the measured ones. */
  readonly warmUpSeconds: number;
  /** Mode `count`: cycles in the measured window. */
  readonly cycles: number;
  /** Mode `profile`: length of the profiled window, and µs between samples. */
  readonly seconds: number;
  readonly sampleIntervalUs: number;
}

export type CycleReport =
  | {
      readonly type: 'counts';
      readonly cycles: number;
      /** CPU the process spent (user + system, µs) over as many cycles more, not hooked. */
      readonly cpuUs: number;
      /** Asynchronous resources created in the window, by `async_hooks` type. */
      readonly resources: Record<string, number>;
      readonly loopTurns: number;
    }
  | {
      readonly type: 'layers';
      readonly cycles: number;
      readonly wallUs: number;
      /** CPU the process spent in the window (user + system), µs. */
      readonly cpuUs: number;
      /** Sampled self time in the window by layer, µs of wall time. */
      readonly selfUs: Record<string, number>;
    };

const TTL_MS = 10_000;

const setup = await parentMessage<CycleSetup>();
const spec = CONTENDERS.find((c) => c.name === setup.contender);
if (!spec) throw new Error(`no contender named ${setup.contender}`);
const clients = await openClients(setup.urls);
const lib = spec.make(clients, 'defaults');
const key = `bench:cost:${process.pid}`;
const warmUpEnd = nowMs() + setup.warmUpSeconds * 1_000;
while (nowMs() < warmUpEnd) await cycle(lib, 1);
const report = setup.mode === 'count' ? await count(lib) : await profile(lib);
await sendToParent<CycleReport>(report);
await lib.close();
closeClients(clients);
process.exit(0);

/** Runs `n` cycles, one at a time. */
async function cycle(lib: Contender, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await (await lib.acquire(key, TTL_MS)).release();
}

async function count(lib: Contender): Promise<CycleReport> {
  const resources: Record<string, number> = {};
  const hook = createHook({
    init(_id, type) {
      resources[type] = (resources[type] ?? 0) + 1;
    },
  });
  const turnsBefore = performance.nodeTiming.uvMetricsInfo.loopCount;
  hook.enable();
  await cycle(lib, setup.cycles);
  hook.disable();
  const loopTurns = performance.nodeTiming.uvMetricsInfo.loopCount - turnsBefore;
  // The hook costs CPU of its own: the process's CPU is measured over cycles it does not see.
  const cpuAtStart = process.cpuUsage();
  await cycle(lib, setup.cycles);
  const cpu = process.cpuUsage(cpuAtStart);
  return {
    type: 'counts',
    cycles: setup.cycles,
    cpuUs: cpu.user + cpu.system,
    resources,
    loopTurns,
  };
}

async function profile(lib: Contender): Promise<CycleReport> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: setup.sampleIntervalUs });
  await session.post('Profiler.start');
  const cpuAtStart = process.cpuUsage();
  const started = nowMs();
  const end = started + setup.seconds * 1_000;
  let cycles = 0;
  while (nowMs() < end) {
    await cycle(lib, 1);
    cycles++;
  }
  const wallUs = (nowMs() - started) * 1_000;
  const cpu = process.cpuUsage(cpuAtStart);
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  const layerOfNode = new Map(profile.nodes.map((node) => [node.id, layerOf(node.callFrame)]));
  const selfUs: Record<string, number> = {};
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample stands for the time until the next one.
  for (let i = 0; i < samples.length - 1; i++) {
    const layer = layerOfNode.get(samples[i] as number) ?? IDLE;
    selfUs[layer] = (selfUs[layer] ?? 0) + (deltas[i + 1] ?? 0);
  }
  return { type: 'layers', cycles, wallUs, cpuUs: cpu.user + cpu.system, selfUs };
}
