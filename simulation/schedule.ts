/**
 * One schedule of the simulation: a world (1, 3 or 5 simulated nodes, their links and
 * faults), a few clients each with its own real `Locker`, and a workload of acquire, hold,
 * release, all on virtual time and drawn from one seed. Returns the history (an event log,
 * the same for the same seed, bit for bit) and what the oracle found wrong in it.
 */
import { type Lock, Locker } from '../src/index.js';
import { type ClientProcess, SimConnection } from './connection.js';
import { injectFaults } from './faults.js';
import { type FaultRates, Links, WorldNode } from './network.js';
import { type Holding, violations } from './oracle.js';
import { Random } from './random.js';
import { installVirtualTime } from './virtual-time.js';

export interface ScheduleResult {
  readonly seed: number;
  readonly log: readonly string[];
  readonly violations: readonly string[];
  readonly holdings: number;
}

/** How long clients keep starting acquisitions (virtual ms). */
const WORKLOAD_MS = 4_000;
/** Virtual time allowed for everything to finish after that. */
const DRAIN_MS = 60_000;
/** The longest TTL the workload asks for (ms). */
const MAX_TTL_MS = 800;
/** Node clocks drift by less than the engine's default allowance (driftFactor 0.01). */
const MAX_DRIFT_RATE = 0.005;

function faultRates(random: Random): FaultRates {
  const calm = random.chance(0.2);
  const p = (max: number) => (calm ? 0 : random.next() * max);
  // Some schedules reset connections often: late requests from old connections then meet
  // the later attempts and holders that invariant 11 protects.
  const stormy = random.chance(0.3);
  return {
    requestLoss: p(0.03),
    replyLoss: p(0.03),
    reset: p(stormy ? 0.15 : 0.02),
    lateDelivery: p(1),
    resend: p(0.5),
    delayMs: 0.2 + random.next() * 6,
    // Slow messages around the per-node timeout (20 ms for these TTLs) eat validity.
    slow: p(0.2),
    slowMs: random.pick([15, 30, 60, 400]),
  };
}

export interface ScheduleOptions {
  /**
   * Some acquisitions extend automatically (the watchdog), and clients trust them until
   * their signal fires. It found a failed extension that freed the key before the holder's
   * signal fired (seed 40, now a regression test). Off by default for now: with it, a
   * schedule does not yet replay bit for bit (something of the watchdog's outlives it).
   */
  readonly autoExtend?: boolean;
}

export async function runSchedule(
  seed: number,
  { autoExtend: extending = false }: ScheduleOptions = {},
): Promise<ScheduleResult> {
  const random = new Random(seed);
  const time = installVirtualTime(new Random(seed ^ 0x5bd1e995));
  const log: string[] = [];
  const holdings: Holding[] = [];
  const keyLosses: number[] = [];
  const silent: string[] = [];
  const note = (line: string) => log.push(`${time.now().toFixed(3)} ${line}`);
  try {
    const links = new Links(random, faultRates(random));
    const nodeCount = random.pick([1, 3, 5]);
    const world = Array.from(
      { length: nodeCount },
      (_, i) => new WorldNode(`n${i + 1}:6379`, random, MAX_DRIFT_RATE),
    );
    const resources = Array.from({ length: random.int(1, 2) }, (_, i) => `r${i}`);
    const clientCount = random.int(2, 4);
    // Which primitives this schedule uses, and the semaphore's permits.
    const kinds = random.pick<readonly Holding['kind'][]>([
      ['lock'],
      ['lock', 'permit', 'read', 'write'],
      ['permit'],
      ['read', 'write'],
    ]);
    const permits = random.int(1, 3);
    note(`world nodes=${nodeCount} clients=${clientCount} kinds=${kinds} permits=${permits}`);

    const clients = Array.from({ length: clientCount }, (_, id) => {
      const process: ClientProcess = { pausedUntil: 0 };
      const connections = world.map((node) => new SimConnection(node, links, process));
      const locker = new Locker({
        nodes: connections,
        retryDelayMs: random.int(5, 60),
        // A restarted node may have lost its keys: it must not vote before every lease it
        // could have granted ran out. The default covers only this locker's own TTLs.
        restartGraceMs: MAX_TTL_MS,
      });
      locker.events.on('warning', (warning) => note(`c${id} warning ${warning.code}`));
      locker.events.on('extended', (event) =>
        note(`c${id} ${event.resource} extended by ${event.validityMs.toFixed(3)}`),
      );
      locker.events.on('lost', (event) => note(`c${id} ${event.resource} lost`));
      return {
        id,
        process,
        locker,
        semaphore: locker.semaphore('s0', { permits }),
        readWrite: locker.readWriteLock('w0'),
        closedAt: Number.POSITIVE_INFINITY,
      };
    });

    let running = clientCount;
    const loops = clients.map(async (client) => {
      const own = new Random(random.int(0, 2 ** 32 - 1));
      while (time.now() < WORKLOAD_MS && client.closedAt === Number.POSITIVE_INFINITY) {
        const kind = own.pick(kinds);
        const resource = kind === 'lock' ? own.pick(resources) : kind === 'permit' ? 's0' : 'w0';
        const ttlMs = own.int(50, MAX_TTL_MS);
        const fair = own.chance(0.4);
        const fencing = kind === 'lock' && own.chance(0.4);
        const autoExtend = extending && own.chance(0.3);
        const options = { ttlMs, waitMs: own.int(0, 1_500), fair, autoExtend };
        let lock: Lock;
        try {
          if (kind === 'lock')
            lock = await client.locker.acquire(resource, { ...options, fencing });
          else if (kind === 'permit') lock = await client.semaphore.acquire(options);
          else lock = await client.readWrite[kind].acquire(options);
        } catch (error) {
          note(`c${client.id} ${resource} failed ${(error as Error).name}`);
          await pause(own.next() * 50);
          continue;
        }
        const acquiredAt = time.now();
        // Extended or not, the client trusts the lock until its signal fires (invariant 6:
        // at the latest at the local validity deadline), and without extension no longer
        // than the deadline it read at acquisition.
        const deadline = autoExtend ? Number.POSITIVE_INFINITY : acquiredAt + lock.remainingMs();
        let lostAt = Number.POSITIVE_INFINITY;
        lock.signal.addEventListener('abort', () => {
          lostAt = time.now();
        });
        note(`c${client.id} ${resource} ${kind} until ${deadline.toFixed(3)} fence ${lock.fence}`);
        await pause(own.next() * ttlMs * (autoExtend ? 3 : 1.3));
        if (
          lock.remainingMs() === 0 &&
          !lock.signal.aborted &&
          client.closedAt === Number.POSITIVE_INFINITY
        ) {
          silent.push(`c${client.id} ${resource}: validity ran out at ${time.now()} and no signal`);
        }
        const end = Math.min(time.now(), deadline, lostAt, client.closedAt);
        holdings.push({
          client: client.id,
          resource,
          kind,
          permits,
          from: acquiredAt,
          to: end,
          fence: lock.fence,
        });
        const result = await lock.release().catch((error: Error) => error.name);
        note(`c${client.id} ${resource} released ${typeof result === 'string' ? result : ''}`);
      }
      running -= 1;
    });

    const faults = injectFaults(random, world, clients, WORKLOAD_MS, (line) => {
      if (line.includes('persistence=false')) keyLosses.push(time.now());
      note(line);
    });
    await time.run(() => running === 0, WORKLOAD_MS + DRAIN_MS);
    faults.stop();
    const stuck = running;
    let closed = 0;
    for (const client of clients) {
      client.locker.close().then(() => {
        closed += 1;
      });
    }
    await time.run(() => closed === clientCount, time.now() + DRAIN_MS);
    void loops;
    const found = [...violations(holdings, keyLosses), ...silent];
    if (stuck > 0) found.push(`${stuck} client(s) still busy ${DRAIN_MS} ms after the workload`);
    if (closed < clientCount) found.push(`${clientCount - closed} locker(s) did not close`);
    note(`end holdings=${holdings.length}`);
    return { seed, log, violations: found, holdings: holdings.length };
  } finally {
    time.uninstall();
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
