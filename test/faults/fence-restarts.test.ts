/**
 * Fault-suite scenario: fences across empty restarts of the one node that keeps the counter.
 * Workers do fenced read-modify-write on a counter under a lock on one node, while the
 * nemesis restarts that node again and again, at once and empty (SIGKILL, same port, no
 * persistence). Fences must keep growing: every holding's claim and write is accepted by the
 * store, none comes out of order, none is lost. The workers' `restartGraceMs` keeps the
 * restarted node out for a lease, so holdings do not overlap and every write must apply.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';
import { bundleWorker, runScenario, type Targets } from './scenario.js';

const SECONDS = Number(process.env.FAULT_SECONDS ?? 3);
const TTL_MS = 400;
let lockNode: RedisNodes;
let storeNode: RedisNodes;
const workerDir = mkdtempSync(join(tmpdir(), 'distlock-fault-worker-'));
let worker: string;

beforeAll(async () => {
  [lockNode, storeNode, worker] = await Promise.all([
    startRedis(),
    startRedis(),
    bundleWorker(workerDir),
  ]);
});

afterAll(async () => {
  await Promise.all([lockNode?.stop(), storeNode?.stop()]);
  rmSync(workerDir, { recursive: true, force: true });
});

/** Restarts the node empty once a few holdings began since its last restart. */
async function restartTheNode({ acquisitions, started, done }: Targets): Promise<void> {
  while (!started() && !done()) await delay(5);
  const before = acquisitions();
  while (acquisitions() < before + 3 && !done()) await delay(5);
  if (done()) return;
  await lockNode.nodes[0]?.restart();
}

describe('fault suite (fenced read-modify-write on one node)', {
  timeout: (SECONDS + 30) * 1_000,
}, () => {
  it('the node restarted empty again and again: fences keep growing, every write applies', async () => {
    let restarts = 0;
    const r = await runScenario({
      worker,
      lockUrls: lockNode.urls,
      nodeUrls: lockNode.urls,
      storeUrl: storeNode.urls[0] as string,
      seconds: SECONDS,
      fencing: true,
      ttlMs: TTL_MS,
      restartGraceMs: TTL_MS,
      nemesis: async (t) => {
        while (!t.done()) {
          await restartTheNode(t);
          if (!t.done()) restarts++;
        }
      },
    });
    // A holding whose claim the store refused (a fence below one it saw) records no write.
    const refused = r.holdings - r.writes;
    console.log(
      `fault suite, one node restarted empty ${restarts} times in ${SECONDS} s: ` +
        `${r.holdings} holdings, ${r.writes} writes (${r.appliedWrites} applied), ` +
        `${refused} claims refused, ${r.fencesOutOfOrder.length} out of fence order, ` +
        `${r.overlaps.length} overlapping holdings, ${r.lostWrites.length} lost writes`,
    );
    expect(restarts).toBeGreaterThan(0);
    expect(r.holdings).toBeGreaterThan(10);
    expect({ refused, staleWrites: r.writes - r.appliedWrites }).toEqual({
      refused: 0,
      staleWrites: 0,
    });
    const { overlaps, fencesOutOfOrder, lostWrites, leftoverKeys } = r;
    expect({ overlaps, fencesOutOfOrder, lostWrites, leftoverKeys }).toEqual({
      overlaps: [],
      fencesOutOfOrder: [],
      lostWrites: [],
      leftoverKeys: [],
    });
  });
});
