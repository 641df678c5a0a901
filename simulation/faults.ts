/**
 * The faults a schedule injects besides those of the links (see connection.ts), at random
 * moments drawn from the seed until `untilMs` of virtual time.
 */
import type { Locker } from '../src/index.js';
import type { ClientProcess } from './connection.js';
import type { WorldNode } from './network.js';
import type { Random } from './random.js';
import { allows, type FaultKind, type ScheduleShape } from './shape.js';

export interface FaultTargets {
  readonly id: number;
  readonly process: ClientProcess;
  readonly locker: Locker;
  closedAt: number;
}

/** The longest client pause (ms). */
export const MAX_CLIENT_PAUSE_MS = 2_000;
/** The longest node pause, and the longest a crashed node stays down (ms). */
export const MAX_NODE_PAUSE_MS = 1_000;
export const MAX_NODE_DOWN_MS = 500;
/** How far behind its master a promoted replica may be (ms of writes lost). */
export const MAX_REPLICA_LAG_MS = 300;
/** The longest jump back of a node's clock (ms). */
export const MAX_CLOCK_JUMP_MS = 2_000;

export interface InjectedFaults {
  /** How many faults were injected so far. */
  readonly count: number;
  /** How far back node clocks were moved in all (ms): keys set before live that much longer. */
  readonly jumpedBackMs: number;
  stop(): void;
}

/**
 * Node pauses, crashes and restarts with and without persistence, failovers to a replica
 * that lags (writes of its last few hundred ms lost), clock jumps (back: a
 * forward jump past the drift allowance breaks any Redis lock, Redlock included), client
 * pauses longer than a TTL, and one client's `close()` at a random moment. Until `untilMs`,
 * of the kinds `shape` allows; none at all when `quiet`.
 */
export function injectFaults(
  random: Random,
  world: readonly WorldNode[],
  clients: readonly FaultTargets[],
  shape: ScheduleShape,
  quiet: boolean,
  note: (line: string) => void,
): InjectedFaults {
  let stopped = false;
  let count = 0;
  let jumpedBackMs = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const failovers: (() => void)[] = [];
  const meanGapMs = random.pick([100, 300, 1_000, Number.POSITIVE_INFINITY]);
  const faults = {
    get count() {
      return count;
    },
    get jumpedBackMs() {
      return jumpedBackMs;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      // A failover whose master has not crashed yet is called off: its replica caught up.
      for (const cancel of failovers) cancel();
    },
  };
  if (!Number.isFinite(meanGapMs) || quiet) return faults;
  /** Whether a drawn fault of `kind` takes effect: counted and logged when it does. */
  const inject = (kind: FaultKind, line: string) => {
    if (!allows(shape, kind)) return false;
    count += 1;
    note(`fault ${line}`);
    return true;
  };
  const next = () => {
    timer = setTimeout(
      () => {
        if (stopped || performance.now() > shape.workloadMs) return;
        const node = random.pick(world);
        const client = random.pick(clients);
        switch (random.int(0, 4)) {
          case 0: {
            const ms = random.next() * MAX_NODE_PAUSE_MS;
            if (inject('node-pause', `pause ${node.node.name} ${ms.toFixed(1)}`)) node.pause(ms);
            break;
          }
          case 1: {
            if (!node.up) break;
            // One draw: a restart with its keys, a failover to a replica that lags (drawn
            // from the same number), or a restart without keys, each as often as before.
            const kind = random.next();
            const downMs = random.next() * MAX_NODE_DOWN_MS;
            // A Cluster's masters restart with their keys: a Cluster node never abstains
            // after a restart (docs/redlock-and-safety.md), so a master that loses keys
            // breaks its locks, as documented. The draws stay the same.
            if (kind < 0.25 || kind >= 0.5 || node.cluster) {
              const persistence = kind < 0.25 || node.cluster !== undefined;
              const line = `crash ${node.node.name} persistence=${persistence}`;
              if (inject('crash', line)) node.crash(downMs, persistence);
              break;
            }
            const lagMs = ((kind - 0.25) / 0.25) * MAX_REPLICA_LAG_MS;
            const line = `failover ${node.node.name} lag=${lagMs.toFixed(1)}`;
            if (inject('failover', line)) {
              const promoted = () => note(`replica of ${node.node.name} promoted: writes lost`);
              failovers.push(node.failover(lagMs, downMs, promoted));
            }
            break;
          }
          case 2: {
            const ms = -random.next() * MAX_CLOCK_JUMP_MS;
            if (inject('clock-jump', `clock ${node.node.name} ${ms.toFixed(1)}`)) {
              node.jump(ms);
              jumpedBackMs -= ms;
            }
            break;
          }
          case 3: {
            const ms = random.next() * MAX_CLIENT_PAUSE_MS;
            if (inject('client-pause', `client-pause c${client.id} ${ms.toFixed(1)}`)) {
              const until = performance.now() + ms;
              client.process.pausedUntil = Math.max(client.process.pausedUntil, until);
            }
            break;
          }
          case 4: {
            if (!random.chance(0.2) || client.closedAt !== Number.POSITIVE_INFINITY) break;
            if (!inject('close', `close c${client.id}`)) break;
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
  return faults;
}
