/**
 * Child process of the semaphore scenario (bench/semaphore.ts). It runs a few workers, each
 * with its own clients and its own instance of the library, that all ask for permits of the
 * same semaphore, and talks to the parent over IPC:
 *
 *   parent → child  `setup`  which contender, nodes, semaphore and worker ids
 *   child → parent  `ready`  clients connected, scripts loaded
 *   parent → child  `start`  the shared deadline (nowMs(), comparable across processes)
 *   child → parent  `done`   every acquisition and failure, once all workers stopped
 *
 * After the deadline, a worker still waiting keeps waiting until `drainMs` later, then gives
 * up (counted as abandoned), so that the child always reports.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { parentMessage, sendToParent } from './child-workers.js';
import { closeClients, openClients } from './clients.js';
import type { Acquisition } from './contention-worker.js';
import {
  SEMAPHORE_CONTENDERS,
  type SemaphoreContender,
  type SemaphoreSettings,
} from './semaphore-contenders.js';
import { nowMs } from './stats.js';

export interface SemaphoreWorkerSetup extends SemaphoreSettings {
  readonly type: 'setup';
  readonly contender: string;
  readonly urls: readonly string[];
  readonly key: string;
  readonly workerIds: readonly number[];
  readonly holdMs: number;
  readonly drainMs: number;
}

export interface SemaphoreWorkerStart {
  readonly type: 'start';
  readonly deadline: number;
}

export type SemaphoreWorkerReport =
  | { readonly type: 'ready' }
  | {
      readonly type: 'done';
      readonly acquisitions: Acquisition[];
      readonly acquireFailures: number;
      readonly releaseFailures: number;
      /** Waits given up `drainMs` after the deadline. */
      readonly abandoned: number;
    };

const setup = await parentMessage<SemaphoreWorkerSetup>();
const spec = SEMAPHORE_CONTENDERS.find((c) => c.name === setup.contender);
if (!spec) throw new Error(`no semaphore contender named ${setup.contender}`);
const workers: { id: number; clients: Redis[]; lib: SemaphoreContender }[] = [];
for (const id of setup.workerIds) {
  const clients = await openClients(setup.urls);
  workers.push({ id, clients, lib: spec.make(clients, setup) });
}
// Warm-up on a private semaphore: connections settled, scripts loaded, subscriptions made.
const warmSignal = new AbortController().signal;
await Promise.all(
  workers.map(async ({ id, lib }) => {
    await (await lib.acquire(`${setup.key}:warm:${process.pid}:${id}`, warmSignal)).release();
  }),
);
await sendToParent<SemaphoreWorkerReport>({ type: 'ready' });

const { deadline } = await parentMessage<SemaphoreWorkerStart>();
const drain = AbortSignal.timeout(Math.ceil(Math.max(0, deadline - nowMs()) + setup.drainMs));
const acquisitions: Acquisition[] = [];
let acquireFailures = 0;
let releaseFailures = 0;
let abandoned = 0;
await Promise.all(
  workers.map(async ({ id: worker, lib }) => {
    while (nowMs() < deadline) {
      const t0 = nowMs();
      let held: Awaited<ReturnType<typeof lib.acquire>>;
      try {
        held = await lib.acquire(setup.key, drain);
      } catch {
        if (drain.aborted) {
          abandoned++;
          break;
        }
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
for (const { clients, lib } of workers) {
  await lib.close();
  closeClients(clients);
}
await sendToParent<SemaphoreWorkerReport>({
  type: 'done',
  acquisitions,
  acquireFailures,
  releaseFailures,
  abandoned,
});
process.disconnect();
