/**
 * One schedule of the simulation: a world (1, 3 or 5 simulated nodes, the first of them
 * sometimes a Redis Cluster of two masters, a fenced store, their
 * links and faults), a few clients each with its own real `Locker`, and a workload, all on
 * virtual time and drawn from one seed. Then faults stop and every waiter must be served;
 * then every locker closes and no key may be left without a TTL. Returns the history (an
 * event log, the same for the same seed, bit for bit) and what the oracle found wrong in it.
 */
import { Locker } from '../src/index.js';
import { BARGE_WINDOW_MS } from '../src/lua/waiting-line.js';
import { calmAfterLapsedLeadership } from './campaign.js';
import { moveSlots, SimCluster, SimClusterConnection } from './cluster.js';
import { type ClientProcess, SimConnection } from './connection.js';
import { injectFaults } from './faults.js';
import { FencedStore } from './fenced-store.js';
import { drawnFocus, focusSettings } from './focus.js';
import { calmReadViolations, leaderReadViolations } from './leader-reads.js';
import { lineOrderViolations } from './line-order.js';
import { serveEveryWaiter } from './liveness.js';
import { drawFaultRates, Links, WorldNode } from './network.js';
import { storeViolations, violations } from './oracle.js';
import { Random } from './random.js';
import { allows, FULL_SHAPE, type ScheduleShape } from './shape.js';
import { drawTickTimes, missedTicks, scheduleTicks, tickViolations } from './ticks.js';
import { EPOCH_MS, installVirtualTime } from './virtual-time.js';
import { type Action, type Client, holdOnce, type Journal, MAX_TTL_MS } from './workload.js';

export interface ScheduleResult {
  readonly seed: number;
  readonly log: readonly string[];
  readonly violations: readonly string[];
  readonly holdings: number;
  /** Faults injected: by the links (losses, resets, late and slow messages) and the injector. */
  readonly faults: number;
  /** How long after faults stopped the last waiter was served (ms), and the bound. */
  readonly servedWithinMs: number;
  readonly livenessBoundMs: number;
}

/** Virtual time allowed for everything to finish after the workload, and after the close. */
const DRAIN_MS = 60_000;
/** How long the scheduled jobs go on after every waiter was served (ms). */
const TICKS_AFTER_CALM_MS = 3_000;
/** Ticks this close to the end may not have started their job yet (ms). */
const TICK_START_MS = 200;
/** Node clocks drift by less than the engine's default allowance (driftFactor 0.01). */
const MAX_DRIFT_RATE = 0.005;

/** Runs the schedule of `seed`, under `shape` (all of it unless told). */
export async function runSchedule(
  seed: number,
  shape: ScheduleShape = FULL_SHAPE,
): Promise<ScheduleResult> {
  const random = new Random(seed);
  const time = installVirtualTime(new Random(seed ^ 0x5bd1e995));
  const log: string[] = [];
  const keyLosses: number[] = [];
  // When a node's clock was set back, and by how much (for the fence and leader oracles).
  const clockJumps: { at: number; backMs: number }[] = [];
  // For the leader reads' oracle: failovers that lost writes.
  const failing = new Map<string, number>();
  const failovers: { lostFrom: number; promotedAt: number }[] = [];
  const journal: Journal = {
    holdings: [],
    waits: [],
    terms: [],
    leaderReads: [],
    tickRuns: [],
    nodeClockUs: undefined,
    silent: [],
    note: (line) => log.push(`${time.now().toFixed(3)} ${line}`),
  };
  try {
    const focus = shape.focus ?? drawnFocus(random.next());
    const settings = focusSettings(focus);
    // The faults the focus never has are off as if the shape said so (they draw all the same).
    if (settings.off) shape = { ...shape, off: new Set([...shape.off, ...settings.off]) };
    const focused = focus !== 'mixed' && !settings.mixedWorkload;
    const links = new Links(random, drawFaultRates(random, shape, focus), journal.note);
    const clientLinks: Links[] = [];
    // With a faulty minority, the other nodes' links only delay messages.
    const healthy = settings.faultyMinority && new Links(random, links.rates, journal.note);
    if (healthy) {
      healthy.calm();
      clientLinks.push(healthy);
    }
    const slowness = (drawn: number) => (allows(shape, 'slow') ? drawn : 0);
    const drawnNodes = random.pick([1, 3, 5]);
    const nodeCount =
      settings.faultyMinority || settings.leaseRecords
        ? Math.max(3, drawnNodes)
        : Math.min(drawnNodes, settings.maxNodes ?? drawnNodes);
    /** The nodes that faults hit: the first ones (all of them but with a faulty minority). */
    const faulty = settings.faultyMinority ? Math.floor((nodeCount - 1) / 2) : nodeCount;
    const drift = allows(shape, 'drift') ? MAX_DRIFT_RATE : 0;
    const fast = allows(shape, 'drift') ? settings.driftRate : undefined;
    // With the cluster focus, the first node is a Redis Cluster of two masters, n1a and n1b,
    // whose clocks agree (see SimCluster).
    const first = settings.cluster ? new WorldNode('n1a:6379', random, drift, fast) : undefined;
    const cluster =
      first && new SimCluster([first, new WorldNode('n1b:6379', random, drift, first.driftRate)]);
    const world = Array.from({ length: nodeCount }, (_, i) =>
      i === 0 && cluster ? cluster : new WorldNode(`n${i + 1}:6379`, random, drift, fast),
    );
    /** Every Redis server: the nodes, and each master of the cluster. */
    const servers = world.flatMap((node) => (node instanceof SimCluster ? node.shards : [node]));
    // One node: its clock (a cluster's masters share one) is what a fence is drawn above.
    const [only] = world;
    const onlyClock = only instanceof SimCluster ? only.shards[0] : only;
    if (onlyClock && world.length === 1) journal.nodeClockUs = () => onlyClock.clockUs();
    const store = new FencedStore(random);
    const drawnClients = focused ? random.int(3, 4) : random.int(2, 4);
    const clientCount = Math.min(drawnClients, shape.clients ?? drawnClients);
    const drawnResources = random.int(1, 2);
    const drawnActions = random.pick<readonly Action[]>([
      ['lock'],
      ['lock', 'all'],
      ['lock', 'all', 'permit', 'read', 'write', 'lead'],
      ['permit'],
      ['read', 'write'],
    ]);
    const workload = {
      resources: Array.from({ length: focused ? 1 : drawnResources }, (_, i) => `r${i}`),
      actions: focused ? (settings.actions ?? (['lock'] as const)) : drawnActions,
      permits: random.int(1, 3),
      maxTtlMs: settings.maxTtlMs,
      ...(settings.habits ? { habits: settings.habits } : {}),
    };
    journal.note(
      `world focus=${focus} nodes=${nodeCount} clients=${clientCount} actions=${workload.actions} resources=${workload.resources} permits=${workload.permits}`,
    );

    const clients: Client[] = Array.from({ length: clientCount }, (_, id) => {
      const process: ClientProcess = { name: `c${id}`, pausedUntil: 0, cutOffUntil: 0 };
      // Focused on slow replies, each client's links have a slowness of their own: a slow
      // holder's lease runs out while a fast rival's retry already lands.
      const own =
        focus === 'slow-replies'
          ? new Links(random, { ...links.rates, slow: slowness(random.next()) }, journal.note)
          : links;
      if (own !== links) clientLinks.push(own);
      const connections = world.map((node, index) =>
        node instanceof SimCluster
          ? new SimClusterConnection(node, own, process)
          : new SimConnection(node, healthy && index >= faulty ? healthy : own, process),
      );
      const locker = new Locker({
        nodes: connections,
        retryDelayMs: focus === 'slow-replies' ? random.int(5, 15) : random.int(5, 60),
        // A restarted node may have lost its keys: it must not vote before every lease it
        // could have granted ran out. By default that is the longest lease on record on the
        // nodes, which the lease-records focus keeps; the others give the workload's longest.
        ...(settings.leaseRecords ? {} : { restartGraceMs: MAX_TTL_MS }),
        // The client's name, not this host's and pid: the same seed, the same values stored.
        owner: `c${id}`,
      });
      locker.events.on('warning', (warning) => journal.note(`c${id} warning ${warning.code}`));
      locker.events.on('extended', (event) =>
        journal.note(`c${id} ${event.resource} extended by ${event.validityMs.toFixed(3)}`),
      );
      locker.events.on('lost', (event) => journal.note(`c${id} ${event.resource} lost`));
      // What line-order.ts needs of each acquisition of a lock: a client makes one at a time.
      locker.events.on('retry', () => {
        if (client.waiting) client.waiting.refusedAt ??= performance.now();
      });
      locker.events.on('acquired', ({ attempts }) => {
        if (client.waiting) client.waiting.attempts = attempts;
      });
      const client: Client = {
        id,
        process,
        locker,
        semaphore: locker.semaphore('s0', { permits: workload.permits }),
        readWrite: locker.readWriteLock('w0'),
        store: new SimConnection(store.world, own, process),
        closedAt: Number.POSITIVE_INFINITY,
        waiting: undefined,
      };
      return client;
    });

    let running = clientCount;
    for (const client of clients) {
      const own = new Random(random.int(0, 2 ** 32 - 1));
      void (async () => {
        while (time.now() < shape.workloadMs && client.closedAt === Number.POSITIVE_INFINITY) {
          await holdOnce(client, workload, own, journal);
        }
        running -= 1;
      })();
    }

    // Schedules that draw every kind of acquisition also run a job every second on every
    // client, with a generator of their own: the other draws stay as they were.
    const tickRandom = new Random(seed ^ 0x7e1c);
    const tickTimes = workload.actions.includes('lead') ? drawTickTimes(tickRandom) : undefined;
    const jobs =
      tickTimes && scheduleTicks(clients, tickTimes, tickRandom, journal.tickRuns, journal.note);

    const slotMoves =
      cluster &&
      moveSlots(cluster, new Random(seed ^ 0x5107), allows(shape, 'slot-move'), journal.note);
    const targets = healthy ? servers.slice(0, faulty) : servers;
    const faults = injectFaults(random, targets, clients, shape, settings.quiet, (line) => {
      if (line.includes('persistence=false') || line.includes('promoted: writes lost')) {
        keyLosses.push(time.now());
      }
      if (line.startsWith('fault clock ')) {
        clockJumps.push({ at: time.now(), backMs: -Number(line.split(' ').at(-1)) });
      }
      const failover = /^fault failover (\S+) /.exec(line);
      if (failover) failing.set(failover[1] as string, time.now());
      const promoted = /^replica of (\S+) promoted/.exec(line);
      const lostFrom = promoted && failing.get(promoted[1] as string);
      if (typeof lostFrom === 'number') failovers.push({ lostFrom, promotedAt: time.now() });
      journal.note(line);
    });
    await time.run(() => running === 0, shape.workloadMs + DRAIN_MS);
    const found: string[] = [];
    if (running > 0)
      found.push(`${running} client(s) still busy ${DRAIN_MS} ms after the workload`);
    if (jobs && tickTimes && settings.faultyMinority) {
      // A majority of the nodes stayed healthy all along, and no client paused or closed:
      // every tick of the workload must have run, not only those after the faults, but for
      // one that no try got a majority for until its window closed (as documented).
      // A tick may still be asked again until its window (half of lockAtLeastFor) is over.
      const to = EPOCH_MS + shape.workloadMs - TICK_START_MS - tickTimes.lockAtLeastFor;
      const all = () => clients.map(({ id }) => id);
      const when = 'while faults went on';
      found.push(
        ...missedTicks(journal.tickRuns, EPOCH_MS + 1, to, all, when, jobs.unreachedTicks),
      );
      for (const tick of jobs.unreachedTicks) {
        journal.note(
          `j0 tick ${new Date(tick).toISOString()}: no majority until its window closed`,
        );
      }
    }

    // Faults stop: every waiter must now be served within the bound.
    faults.stop();
    slotMoves?.stop();
    for (const calming of [links, ...clientLinks]) calming.calm();
    let liveness: Awaited<ReturnType<typeof serveEveryWaiter>> | undefined;
    void serveEveryWaiter(clients, workload, faults.jumpedBackMs, random, journal).then(
      (result) => {
        liveness = result;
      },
    );
    await time.run(() => liveness !== undefined, time.now() + DRAIN_MS);
    if (liveness === undefined)
      found.push(`liveness: still waiting ${DRAIN_MS} ms after faults stopped`);
    else found.push(...liveness.unserved);

    // From when a key set before now lives no longer than its own TTL. A node clock moved back
    // keeps a key set before the jump that much longer (as Redis does): a key set before the
    // last jump may outlive it by every jump there was. A request sent before the calm may
    // still be on its way (late after a reset, resent, slow): it sets its key when it
    // arrives, for up to its TTL from then (seed 2050122349: a tick's SET cut off by a reset
    // reached the node 576 ms later, after the calm, and held the next tick).
    const keysGoneAt = () => {
      const lastJumpAt = clockJumps.at(-1)?.at ?? 0;
      const inFlightUntil = Math.max(...[links, ...clientLinks].map((l) => l.lastArrivalAt));
      return Math.max(time.now(), lastJumpAt + faults.jumpedBackMs, inFlightUntil);
    };

    if (jobs && tickTimes) {
      // Every waiter was served: the next ticks must run, once the tick lock held before
      // (at most lockAtMostFor) is gone, on any client still open.
      const goneAt = keysGoneAt();
      const mustRunFrom = EPOCH_MS + goneAt + tickTimes.lockAtMostFor;
      await time.run(() => false, goneAt + TICKS_AFTER_CALM_MS);
      const mustRunTo = EPOCH_MS + time.now() - TICK_START_MS;
      let stopped = false;
      void jobs.stop().then(() => {
        stopped = true;
      });
      await time.run(() => stopped, time.now() + DRAIN_MS);
      const open = clients.some((client) => client.closedAt === Number.POSITIVE_INFINITY);
      const openAt = (tick: number) =>
        clients.filter((client) => client.closedAt > tick - EPOCH_MS).map(({ id }) => id);
      found.push(
        ...tickViolations(journal.tickRuns, mustRunFrom, open ? mustRunTo : mustRunFrom, openAt),
      );
    }

    if (workload.actions.includes('lead')) {
      // Every campaign ended with the workload, the last a leader cut off: once the
      // election's lock keys set before are gone (a lease lasts at most MAX_TTL_MS, by a node
      // clock that may run slow), no read may name a leader.
      const maxTtlMs = MAX_TTL_MS * (1 + MAX_DRIFT_RATE) + 1;
      const calm = await calmAfterLapsedLeadership(clients, time, keysGoneAt, maxTtlMs, journal);
      const { reads, goneAt } = calm;
      found.push(...calmReadViolations(reads, goneAt));
    }

    let closed = 0;
    for (const client of clients) {
      void client.locker.close().then(() => {
        closed += 1;
      });
    }
    await time.run(() => closed === clientCount, time.now() + DRAIN_MS);
    if (closed < clientCount) found.push(`${clientCount - closed} locker(s) did not close`);
    found.push(...keysWithoutTtl(servers));
    const oneNode = nodeCount === 1;
    const clockBacks = clockJumps.map(({ at }) => at);
    found.push(...violations(journal.holdings, { keyLosses, oneNode, clockBacks }));
    found.push(...journal.silent);
    found.push(...storeViolations(store.writes));
    const excuses = { failovers, clockJumps, graceMs: MAX_TTL_MS };
    found.push(...leaderReadViolations(journal.leaderReads, journal.terms, excuses));
    if (focus === 'line-order') {
      // A request and its reply, a release before it and a wake-up: the most a client can
      // learn of a node's line later than the node.
      const slackMs = 4 * 2 * links.rates.delayMs + 2;
      const bounds = { windowMs: BARGE_WINDOW_MS, slackMs };
      found.push(...lineOrderViolations(journal.waits, journal.holdings, bounds));
    }
    const redirected = cluster
      ? ` redirections ${Object.entries(cluster.redirections)
          .map(([kind, n]) => `${kind}=${n}`)
          .join(' ')}`
      : '';
    journal.note(
      `end holdings=${journal.holdings.length} store-writes=${store.writes.length}${redirected}`,
    );
    return {
      seed,
      log,
      violations: found,
      holdings: journal.holdings.length,
      faults: [links, ...clientLinks].reduce((sum, { faults }) => sum + faults, faults.count),
      servedWithinMs: liveness?.servedWithinMs ?? Number.POSITIVE_INFINITY,
      livenessBoundMs: liveness?.boundMs ?? 0,
    };
  } catch (error) {
    // Virtual time stopped moving (see virtual-time.ts): the schedule cannot go on.
    const violation = `schedule aborted: ${(error as Error).message}`;
    journal.note(violation);
    return {
      seed,
      log,
      violations: [violation],
      holdings: journal.holdings.length,
      faults: 0,
      servedWithinMs: Number.POSITIVE_INFINITY,
      livenessBoundMs: 0,
    };
  } finally {
    time.uninstall();
  }
}

/**
 * Keys that never expire, by design: fence counters (fences only grow), an election's leader
 * hash (docs/election.md, "Keys") and a node's lease record (docs/safety.md, "Identities").
 */
const LASTING = [':fence', ':election:leader', ':longest-lease'];

/** Keys that would live for ever, once every locker closed: anything else must carry a TTL. */
function keysWithoutTtl(world: readonly WorldNode[]): string[] {
  const found: string[] = [];
  for (const { node } of world) {
    const keys = node.send('KEYS', ['*']);
    if (keys.kind !== 'array') continue;
    for (const key of keys.value) {
      if (key.kind !== 'bulk' || LASTING.some((end) => key.value.endsWith(end))) continue;
      const ttl = node.send('PTTL', [key.value]);
      if (ttl.kind === 'integer' && ttl.value === -1n) {
        found.push(`${node.name}: key ${key.value} has no TTL after every locker closed`);
      }
    }
  }
  return found;
}
