import calculateSlot from 'cluster-key-slot';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { handOff } from '../../bench/cluster-bus.js';
import { CONNECT_WAIT_MS } from '../../src/driver/connection.js';
import { CHECK_INTERVAL_MS } from '../../src/engine/subscription-check.js';
import { Locker } from '../../src/index.js';
import { type RedisCluster, type RedisServer, startRedisCluster } from '../../src/testing/index.js';
import { until } from '../../src/testing/until.js';
import { type ClusterClientKind, clusterClientKinds } from '../support/cluster-clients.js';
import { resourceWhere } from '../support/cluster-keys.js';

/**
 * Wake-ups follow their slot to a new master, through every Cluster client, whatever the
 * client reports of the move: after a graceful `CLUSTER FAILOVER`, a master SIGKILLed and its
 * replica promoted, and a slot moved to another master. Before: ioredis 6 reported none of
 * them, and every Cluster client but valkey-glide lost the subscription to a SIGKILLed
 * master; their waiters polled for every hand-off, with no warning.
 */
let cluster: RedisCluster;
const clients = clusterClientKinds(() => cluster);
const lockers: Locker[] = [];

/**
 * Far above a hand-off: a waiter that polls pauses at least half of its polling delay,
 * which is at least this (see `pollingMs`); one that gets the lock sooner was woken.
 */
const RETRY_DELAY_MS = 2_000;
/**
 * The longest pause of a waiter whose channel counts as subscribed: 1.5 × its polling delay,
 * max(retryDelayMs, waiter timeout / 4), the waiter timeout being max(1 s, 5 × retryDelayMs)
 * (see `pollingMs` and `waiterTimeoutMs`).
 */
const LONGEST_POLL_MS = 1.5 * Math.max(RETRY_DELAY_MS, Math.max(1_000, 5 * RETRY_DELAY_MS) / 4);
/**
 * Hand-offs after the event that may go unwoken: the first finds the subscription lost and
 * has it checked; the second may be published before the new subscription is in place (the
 * release here follows the waiter's pause within a millisecond). A subscription on a master
 * demoted by a failover may go on relaying wake-ups for a while (a shard's replicas get its
 * `SPUBLISH` too), so a woken hand-off may come before those.
 */
const UNWOKEN_AT_MOST = 2;
/**
 * When wake-ups are back at the latest, from the moment the lockers reach the slot's new
 * master: the unwoken hand-offs, each a poll at most, then the check (an empty `SPUBLISH`)
 * and the subscribe, each bounded by CONNECT_WAIT_MS, after a check that found a subscribe
 * still failing (CHECK_INTERVAL_MS between two).
 */
const WAKE_UPS_BACK_MS =
  (UNWOKEN_AT_MOST + 1) * LONGEST_POLL_MS + CHECK_INTERVAL_MS + 2 * CONNECT_WAIT_MS;

beforeAll(async () => {
  cluster = await startRedisCluster({ replicasPerMaster: 1 });
}, 60_000);
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  await clients.close();
  for (const node of cluster.nodes) if (!node.running) await node.restart();
  await cluster.waitUntilHealthy();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** A resource whose lock key `master` serves. */
function resourceOn(master: RedisServer, name: string): Promise<string> {
  return resourceWhere(cluster, (owner) => owner === master, name);
}

/** The faults that move a slot, each resolving once the cluster names the slot's new master. */
const EVENTS = {
  'a graceful failover': async (victim: RedisServer) => {
    const [replica] = await cluster.replicasOf(victim);
    if (!replica) throw new Error(`no replica of ${victim.port}`);
    await cluster.failover(replica);
  },
  'a SIGKILLed master, its replica promoted': async (victim: RedisServer, key: string) => {
    await victim.kill();
    await until(
      'a replica to take over',
      async () =>
        (await cluster.masterOf(key)) !== victim ? { done: true } : { reason: 'not yet' },
      20_000,
    );
  },
  'a slot moved to another master': async (victim: RedisServer, key: string) => {
    const masters = await cluster.masters();
    const to = masters.find((master) => master !== victim);
    if (!to) throw new Error('a single master');
    await cluster.moveSlot(calculateSlot(key), to);
  },
} as const;

const CASES = Object.keys(EVENTS).flatMap((event, e) =>
  clients.kinds.map((kind, k) => [event as keyof typeof EVENTS, kind.name, kind, e + k] as const),
);

describe('wake-ups after the slot of a waited-for lock moves', () => {
  it.each(CASES)(
    '%s, through %s',
    async (event, _, kind: ClusterClientKind, turn) => {
      const masters = await cluster.masters();
      const victim = masters[turn % masters.length] as RedisServer;
      const name = `${event.split(' ')[1]}-${kind.name.replace(/\W+/g, '-')}`;
      const resource = await resourceOn(victim, name);
      const key = `distlock:{${resource}}`;
      const holder = new Locker({ nodes: [await kind.open()], retryDelayMs: RETRY_DELAY_MS });
      const waiter = new Locker({ nodes: [await kind.open()], retryDelayMs: RETRY_DELAY_MS });
      lockers.push(holder, waiter);
      const warnings: string[] = [];
      waiter.events.on('warning', ({ code }) => warnings.push(code));
      await handOff(holder, waiter, resource, RETRY_DELAY_MS); // subscribed on `victim`
      expect(await handOff(holder, waiter, resource, RETRY_DELAY_MS)).toBeLessThan(
        RETRY_DELAY_MS / 2,
      );

      await EVENTS[event](victim, key);
      // Each locker reaches the slot's new master (its own slot table read again): from then
      // on, a slow hand-off is a wake-up that did not come.
      for (const locker of [holder, waiter]) {
        const lock = await locker.acquire(resource, { ttlMs: 5_000, waitMs: WAKE_UPS_BACK_MS });
        await lock.release();
      }
      const moved = performance.now();
      const woken = (ms: number) => ms < RETRY_DELAY_MS / 2;
      const tookMs: number[] = [];
      const begunMs: number[] = [];
      const backToWoken = () => tookMs.length >= 2 && tookMs.slice(-2).every(woken);
      while (!backToWoken() && tookMs.length <= UNWOKEN_AT_MOST + 3) {
        begunMs.push(performance.now() - moved);
        tookMs.push(await handOff(holder, waiter, resource, RETRY_DELAY_MS));
      }
      // Since the hand-off after the last unwoken one, every one was woken.
      const lastUnwoken = tookMs.findLastIndex((ms) => !woken(ms));
      const backAfterMs = begunMs[lastUnwoken + 1];
      const took = `hand-offs after the event: ${tookMs.map((ms) => ms.toFixed(0)).join(', ')} ms`;
      console.info(`${event}, through ${kind.name}: ${took}`);
      // Before: ioredis 6 (and after a SIGKILL, every client but valkey-glide) polled for good.
      expect(backToWoken(), took).toBe(true);
      expect(tookMs.filter((ms) => !woken(ms)).length, took).toBeLessThanOrEqual(UNWOKEN_AT_MOST);
      expect(backAfterMs, took).toBeLessThan(WAKE_UPS_BACK_MS);
      // A client that did not follow the move has the loss reported, once.
      expect(
        warnings.every((code) => code === 'WAKE_UPS_REPAIRED'),
        `${warnings}`,
      ).toBe(true);
      expect(warnings.length).toBeLessThanOrEqual(1);
    },
    90_000,
  );
});
