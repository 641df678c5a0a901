/**
 * Child process of the contention scenario (bench/contention.ts). It runs a few workers that
 * all fight for the same key, and talks to the parent over IPC:
 *
 *   parent → child  `setup`  which contender, tuning, node and worker ids
 *   child → parent  `ready`  clients connected, scripts loaded
 *   parent → child  `start`  the shared deadline (nowMs(), comparable across processes)
 *   child → parent  `done`   every acquisition and failure, once all workers stopped
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parentMessage, sendToParent } from './child-workers.js';
import { closeClients, openClients } from './clients.js';
import { CONTENDERS, type Tuning } from './contenders.js';
import { nowMs } from './stats.js';

export interface WorkerSetup {
  readonly type: 'setup';
  readonly contender: string;
  readonly tuning: Tuning;
  readonly url: string;
  readonly key: string;
  readonly workerIds: readonly number[];
  readonly ttlMs: number;
  readonly holdMs: number;
}

export interface WorkerStart {
  readonly type: 'start';
  readonly deadline: number;
}

/** One successful acquisition; all times are nowMs(). */
export interface Acquisition {
  readonly worker: number;
  readonly t0: number;
  readonly acquired: number;
  readonly releaseStart: number;
}

export type WorkerReport =
  | { readonly type: 'ready' }
  | {
      readonly type: 'done';
      readonly acquisitions: Acquisition[];
      readonly acquireFailures: number;
      readonly releaseFailures: number;
      /** CPU this process spent (user + system, µs) from the start to its last release. */
      readonly cpuUs: number;
    };

const setup = await parentMessage<WorkerSetup>();
const spec = CONTENDERS.find((c) => c.name === setup.contender);
if (!spec) throw new Error(`no contender named ${setup.contender}`);
const clients = await openClients([setup.url]);
const lib = spec.make(clients, setup.tuning);
// Warm-up on a private key: connections settled, scripts loaded.
await (await lib.acquire(`${setup.key}:warm:${process.pid}`, setup.ttlMs)).release();
await sendToParent<WorkerReport>({ type: 'ready' });

const { deadline } = await parentMessage<WorkerStart>();
const cpuAtStart = process.cpuUsage();
const acquisitions: Acquisition[] = [];
let acquireFailures = 0;
let releaseFailures = 0;
await Promise.all(
  setup.workerIds.map(async (worker) => {
    while (nowMs() < deadline) {
      const t0 = nowMs();
      let held: Awaited<ReturnType<typeof lib.acquire>>;
      try {
        held = await lib.acquire(setup.key, setup.ttlMs);
      } catch {
        acquireFailures++;
        continue;
      }
      const acquired = nowMs();
      await sleep(setup.holdMs);
      const releaseStart = nowMs();
      await held.release().catch(() => releaseFailures++);
      acquisitions.push({ worker, t0, acquired, releaseStart });
    }
  }),
);
const cpu = process.cpuUsage(cpuAtStart);
await lib.close();
closeClients(clients);
const cpuUs = cpu.user + cpu.system;
await sendToParent<WorkerReport>({
  type: 'done',
  acquisitions,
  acquireFailures,
  releaseFailures,
  cpuUs,
});
process.disconnect();
