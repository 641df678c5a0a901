/**
 * The faults a schedule injects besides those of the links (see connection.ts), at random
 * moments drawn from the seed until `untilMs` of virtual time.
 */
import type { Locker } from '../src/index.js';
import type { ClientProcess } from './connection.js';
import type { WorldNode } from './network.js';
import type { Random } from './random.js';

export interface FaultTargets {
  readonly id: number;
  readonly process: ClientProcess;
  readonly locker: Locker;
  closedAt: number;
}

/**
 * Node pauses, crashes and restarts with and without persistence, clock jumps (back: a
 * forward jump past the drift allowance breaks any Redis lock, Redlock included), client
 * pauses longer than a TTL, and one client's `close()` at a random moment.
 */
export function injectFaults(
  random: Random,
  world: readonly WorldNode[],
  clients: readonly FaultTargets[],
  untilMs: number,
  note: (line: string) => void,
): { stop(): void } {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const meanGapMs = random.pick([100, 300, 1_000, Number.POSITIVE_INFINITY]);
  if (!Number.isFinite(meanGapMs)) return { stop() {} };
  const next = () => {
    timer = setTimeout(
      () => {
        if (stopped || performance.now() > untilMs) return;
        const node = random.pick(world);
        const client = random.pick(clients);
        switch (random.int(0, 4)) {
          case 0: {
            const ms = random.next() * 1_000;
            note(`fault pause ${node.node.name} ${ms.toFixed(1)}`);
            node.pause(ms);
            break;
          }
          case 1: {
            if (!node.up) break;
            const persistence = random.chance(0.5);
            note(`fault crash ${node.node.name} persistence=${persistence}`);
            node.crash(random.next() * 500, persistence);
            break;
          }
          case 2: {
            const ms = -random.next() * 2_000;
            note(`fault clock ${node.node.name} ${ms.toFixed(1)}`);
            node.jump(ms);
            break;
          }
          case 3: {
            const ms = random.next() * 2_000;
            note(`fault client-pause c${client.id} ${ms.toFixed(1)}`);
            client.process.pausedUntil = Math.max(
              client.process.pausedUntil,
              performance.now() + ms,
            );
            break;
          }
          case 4: {
            if (!random.chance(0.2) || client.closedAt !== Number.POSITIVE_INFINITY) break;
            note(`fault close c${client.id}`);
            client.closedAt = performance.now();
            client.locker.close();
            break;
          }
        }
        next();
      },
      random.next() * 2 * meanGapMs,
    );
  };
  next();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
