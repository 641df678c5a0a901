/**
 * The fault suite: workers in child processes do fenced read-modify-write on a counter under
 * a distlock lock on 5 nodes, while a nemesis kills, pauses, restarts and partitions nodes or
 * pauses workers past their TTL. The history checker must find no violation, and must find
 * the ones the negative controls provoke. `npm run test:faults` runs it longer
 * (FAULT_SECONDS, default 3 per scenario in `npm test`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FaultProxy,
  type HistoryReport,
  type RedisNodes,
  startRedis,
} from '../../src/testing/index.js';
import { bundleWorker, RESOURCE, runScenario, type Targets } from './scenario.js';

const SECONDS = Number(process.env.FAULT_SECONDS ?? 3);
const TTL_MS = 400;
let lockNodes: RedisNodes;
let storeNode: RedisNodes;
let proxies: FaultProxy[] = [];
const summary: string[] = [];
const workerDir = mkdtempSync(join(tmpdir(), 'distlock-fault-worker-'));
let worker: string;

beforeAll(async () => {
  [lockNodes, storeNode, worker] = await Promise.all([
    startRedis({ nodes: 5 }),
    startRedis(),
    bundleWorker(workerDir),
  ]);
  proxies = await Promise.all(lockNodes.nodes.map((n) => FaultProxy.start(n.port)));
});

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all([lockNodes?.stop(), storeNode?.stop()]);
  rmSync(workerDir, { recursive: true, force: true });
  console.log(
    [
      `fault suite, ${SECONDS} s per scenario:`,
      '  | scenario | faults | holdings | writes | overlapping holdings (or holders beyond the permits) | writes out of fence order | lost writes | leftover keys |',
      '  | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...summary,
    ].join('\n'),
  );
});

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
const someNode = () => pick(lockNodes.nodes);

async function scenario(
  name: string,
  fencing: boolean,
  step?: (t: Targets) => Promise<void>,
  holdMs = 5,
  workers: { permits?: number; readWrite?: boolean; restartGraceMs?: number; ttlMs?: number } = {},
) {
  let faults = 0;
  // The nemesis repeats its step (one fault each) until the workers are done.
  const nemesis = async (t: Targets) => {
    while (step && !t.done()) {
      await step(t);
      faults++;
    }
  };
  const report = await runScenario({
    worker,
    lockUrls: proxies.map((p) => p.url),
    nodeUrls: lockNodes.urls,
    storeUrl: storeNode.urls[0] as string,
    seconds: SECONDS,
    fencing,
    ttlMs: TTL_MS,
    holdMs,
    nemesis,
    ...workers,
  });
  summary.push(describeRun(name, report, faults));
  return report;
}

/** A nemesis step that pauses a node for 300 ms, and the next time kills it past the TTL. */
function pauseOrKillANode(): (t: Targets) => Promise<void> {
  let round = 0;
  return async () => {
    const node = someNode();
    if (round++ % 2 === 0) {
      node.pause();
      await delay(300);
      node.resume();
    } else {
      await node.kill();
      await delay(TTL_MS + 100);
      await node.restart();
    }
    await delay(200);
  };
}

/**
 * Requests delivered late on old connections: 3 nodes' replies are held for 10 ms, then
 * (before the workers' node timeout, 20 ms at this TTL, sends them undos) their requests
 * too, for 60 ms: the undos, retries, extensions and releases sent meanwhile wait; the
 * client side of those connections is reset, the workers reconnect, and the held requests
 * reach the servers 100-200 ms later, after what the workers sent since on their new
 * connections (holdings last 150 ms, so that they land while a lock that a later attempt
 * took is still held).
 */
async function deliverRequestsLate(): Promise<void> {
  const cut = [...proxies].sort(() => Math.random() - 0.5).slice(0, 3);
  for (const p of cut) p.set({ mode: 'hold', direction: 'replies' });
  await delay(10);
  for (const p of cut) p.set({ mode: 'blackhole' });
  await delay(60);
  const orphans = cut.map((p) => p.orphan());
  for (const p of cut) p.set({ mode: 'pass' });
  await delay(100 + Math.random() * 100);
  for (const orphan of orphans) orphan.deliver();
  await delay(200);
}

/**
 * The bare-majority restart scenario's lease and holdings: a holding must outlast the
 * restart and a waiter's next attempt.
 */
const BARE_MAJORITY = { ttlMs: 1_500, holdMs: 600 } as const;

/**
 * Puts the lock on a bare majority and restarts one of its nodes at once: another client
 * takes the lock's key on two nodes, a worker acquires on the other three, one of those is
 * killed with SIGKILL and started again at once, empty, and the other client's keys go.
 * Without the identity check, the restarted node and the two freed ones are a majority for
 * a second holder while the first still holds.
 */
async function restartABareMajorityNode({ acquisitions, started, done }: Targets): Promise<void> {
  // A worker that first meets a node after its restart cannot tell (without restartGraceMs).
  while (!started() && !done()) await delay(5);
  const order = [0, 1, 2, 3, 4].sort(() => Math.random() - 0.5);
  const others = order.slice(0, 2).map((i) => new Redis(lockNodes.urls[i] as string));
  const victim = lockNodes.nodes[order[2] as number];
  const key = `distlock:{${RESOURCE}}`;
  try {
    // Over whatever a worker held there: the next holder gets the other three at most.
    await Promise.all(others.map((c) => c.set(key, 'other', 'PX', BARE_MAJORITY.ttlMs)));
    // A holding that began since: on the other three only.
    const before = acquisitions();
    while (acquisitions() === before && !done()) await delay(2);
    await victim?.restart(); // SIGKILL, and a new process on the same port at once
    const freeing = others.map((c) => c.eval(DELETE_IF_OTHER, 1, key, 'other'));
    await Promise.all(freeing);
  } finally {
    for (const client of others) client.disconnect();
  }
  await delay(BARE_MAJORITY.holdMs);
}

/**
 * The majority-restart control's lease. Its holder stays paused until another worker holds
 * the lock, so the lease costs nothing when the control works; it only bounds the pause
 * when it does not, and must cover three redis-server restarts and the workers'
 * reconnections (their backoff grows by 50 ms a try) on a busy machine.
 */
const MAJORITY_RESTART_TTL_MS = 10_000;

/**
 * Restarts 3 of the 5 nodes, empty, under a holder: the holder is paused (SIGSTOP) as soon as
 * its holding begins, and goes on once another worker holds the lock, once its TTL has
 * passed, or once the other workers are done. Restarting three redis-server processes can take longer than a holding on a busy
 * machine; with the holder paused, the restarts and the others' reconnections land inside
 * its holding however long they take.
 */
async function restartAMajorityUnderAHolder(targets: Targets) {
  const { workers, acquisitions, lastHolder, started, done } = targets;
  // A worker that first meets a node after its restart cannot tell (without restartGraceMs).
  while (!started() && !done()) await delay(5);
  const before = acquisitions();
  while (acquisitions() === before && !done()) await delay(2);
  const holder = lastHolder();
  if (!holder) return;
  holder.kill('SIGSTOP'); // 600 ms into a holding at most: it still holds
  const pausedAt = performance.now();
  const held = acquisitions();
  try {
    await Promise.all(lockNodes.nodes.slice(0, 3).map((n) => n.restart()));
    const until = pausedAt + MAJORITY_RESTART_TTL_MS;
    const othersRunning = () =>
      workers.some((w) => w !== holder && w.exitCode === null && w.signalCode === null);
    while (acquisitions() === held && performance.now() < until && othersRunning()) await delay(2);
  } finally {
    holder.kill('SIGCONT');
  }
  await delay(BARE_MAJORITY.holdMs);
}

const DELETE_IF_OTHER = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** SIGSTOPs a worker while it holds the lock (`intoMs` into its holding), for twice the TTL. */
async function pauseAWorker({ acquisitions, lastHolder, done }: Targets, intoMs = 0) {
  await delay(200);
  // A holding that just began, not the oldest one under way: on a busy machine, that one may
  // have ended by the time the signal lands, and a pause outside a holding shows nothing.
  const before = acquisitions();
  while (acquisitions() === before && !done()) await delay(1);
  const worker = lastHolder();
  if (!worker || done()) return;
  if (intoMs > 0) await delay(intoMs);
  worker.kill('SIGSTOP');
  await delay(2 * TTL_MS);
  worker.kill('SIGCONT');
}

/** Asserts every list of the report empty, so that a failure shows what it found. */
function expectNoViolation(r: HistoryReport): void {
  const { overlaps, excessHolders, fencesOutOfOrder, lostWrites, leftoverKeys } = r;
  expect({ overlaps, excessHolders, fencesOutOfOrder, lostWrites, leftoverKeys }).toEqual({
    overlaps: [],
    excessHolders: [],
    fencesOutOfOrder: [],
    lostWrites: [],
    leftoverKeys: [],
  });
  expect(r.ok).toBe(true);
}

function describeRun(name: string, r: HistoryReport, faults: number): string {
  const lost = r.lostWrites.reduce((sum, l) => sum + (l.expected - l.final), 0);
  const writes = `${r.writes} (${r.appliedWrites} applied)`;
  return `  | ${name} | ${faults} | ${r.holdings} | ${writes} | ${r.overlaps.length + r.excessHolders.length} | ${r.fencesOutOfOrder.length} | ${lost} | ${r.leftoverKeys.length} |`;
}

const timeout = (SECONDS + 30) * 1_000;

describe('fault suite (fenced read-modify-write on 5 nodes)', { timeout }, () => {
  it('no faults: no violation', async () => {
    const r = await scenario('no faults', true);
    expect(r.holdings).toBeGreaterThan(10);
    expectNoViolation(r);
  });

  it('nodes killed and restarted after the TTL: no violation', async () => {
    const r = await scenario('kill + delayed restart', true, async () => {
      const node = someNode();
      await node.kill();
      await delay(TTL_MS + 100);
      await node.restart();
      await delay(200);
    });
    expectNoViolation(r);
  });

  it('nodes paused and resumed: no violation', async () => {
    const r = await scenario('pause node', true, async () => {
      const node = someNode();
      node.pause();
      await delay(300);
      node.resume();
      await delay(200);
    });
    expectNoViolation(r);
  });

  it('two nodes partitioned away and healed: no violation', async () => {
    const r = await scenario('partition 2 of 5', true, async () => {
      const cut = [pick(proxies), pick(proxies)];
      for (const p of cut) p.set({ mode: 'blackhole' });
      await delay(500);
      for (const p of cut) p.set({ mode: 'pass' });
      await delay(300);
    });
    expectNoViolation(r);
  });

  it('requests delivered late on reset connections: no violation', async () => {
    const r = await scenario('late requests on reset connections', true, deliverRequestsLate, 150);
    // 150 ms holdings, and no majority while 3 nodes are cut: about 15 in 3 s when idle.
    expect(r.holdings).toBeGreaterThan(3);
    expectNoViolation(r);
  });

  it('a semaphore of 2 permits, requests delivered late on reset connections: never more than 2 holders', async () => {
    const r = await scenario(
      'semaphore, 2 permits, late requests',
      false,
      deliverRequestsLate,
      150,
      { permits: 2 },
    );
    expect(r.holdings).toBeGreaterThan(3);
    expectNoViolation(r);
  });

  it('a semaphore of 2 permits, nodes paused or killed and restarted: never more than 2 holders', async () => {
    const r = await scenario(
      'semaphore, 2 permits, pause or kill node',
      false,
      pauseOrKillANode(),
      20,
      { permits: 2 },
    );
    expect(r.holdings).toBeGreaterThan(10);
    expectNoViolation(r);
  });

  it('a read-write lock, nodes paused or killed and restarted: no reader with a writer, no lost write', async () => {
    const r = await scenario('read-write lock, pause or kill node', false, pauseOrKillANode(), 20, {
      readWrite: true,
    });
    expect(r.writes).toBeGreaterThan(5);
    expectNoViolation(r);
  });

  it('a node of a bare-majority holder killed and restarted at once, empty: no violation', async () => {
    // The restarted node answers with a new run_id: the workers keep it out for the TTL.
    const r = await scenario(
      'kill -9 + restart at once, holder on a bare majority',
      true,
      restartABareMajorityNode,
      BARE_MAJORITY.holdMs,
      { ttlMs: BARE_MAJORITY.ttlMs },
    );
    expect(r.holdings).toBeGreaterThan(2); // 600 ms holdings: at most 5 in 3 s
    expectNoViolation(r);
  });

  it('workers paused past their TTL: fencing keeps every write in order and none lost', async () => {
    const r = await scenario('pause worker past TTL (fenced)', true, pauseAWorker);
    expect(r.overlaps.length).toBeGreaterThan(0); // the paused holder overlapped the next ones
    expect(r.fencesOutOfOrder).toEqual([]);
    expect(r.lostWrites).toEqual([]);
    expect(r.leftoverKeys).toEqual([]);
  });
});

describe('negative controls: the checker must catch these', { timeout }, () => {
  it('a majority restarted at once without persistence, identity check off: two holders at once', async () => {
    // restartGraceMs: 0 lets restarted nodes vote at once (the workers knew them before).
    const r = await scenario(
      'majority restarted at once, restartGraceMs 0 (control)',
      true,
      restartAMajorityUnderAHolder,
      BARE_MAJORITY.holdMs,
      { restartGraceMs: 0, ttlMs: MAJORITY_RESTART_TTL_MS },
    );
    // Within the first holder's TTL: not after its lease ran out while it was paused.
    const withinALease = r.overlaps.filter(
      ({ first, second }) => second.acquiredAt - first.acquiredAt < MAJORITY_RESTART_TTL_MS,
    );
    expect(withinALease.length).toBeGreaterThan(0);
  });

  it('a node of a bare-majority holder restarted at once, identity check off: two holders at once', async () => {
    const r = await scenario(
      'kill -9 + restart at once, bare majority, restartGraceMs 0 (control)',
      true,
      restartABareMajorityNode,
      BARE_MAJORITY.holdMs,
      { ttlMs: BARE_MAJORITY.ttlMs, restartGraceMs: 0 },
    );
    expect(r.overlaps.length).toBeGreaterThan(0);
  });

  it('a worker paused past its TTL holding a permit: more holders than permits', async () => {
    const r = await scenario(
      'pause permit holder past TTL (control)',
      false,
      (t) => pauseAWorker(t),
      20,
      { permits: 2 },
    );
    expect(r.excessHolders.length).toBeGreaterThan(0);
  });

  it('a read-write lock holder paused past its TTL: a writer overlaps it', async () => {
    const r = await scenario(
      'pause read-write holder past TTL (control)',
      false,
      (t) => pauseAWorker(t),
      20,
      { readWrite: true },
    );
    expect(r.overlaps.length).toBeGreaterThan(0);
  });

  it('a worker paused past its TTL without fencing: lost writes', async () => {
    // Holdings last 50 ms and the pause lands 10 ms into one: after the worker read, before
    // it wrote (a pause before the read loses nothing, which left the control to chance).
    const r = await scenario(
      'pause worker past TTL, no fencing (control)',
      false,
      (t) => pauseAWorker(t, 10),
      50,
    );
    expect(r.lostWrites.length).toBeGreaterThan(0);
  });
});
