/**
 * Scenario 8: what a hand-off costs the other shards of a Redis Cluster. On a 3-master
 * Cluster (no replicas), one locker holds a lock and another waits for it, `hops` times over;
 * per master, the pub/sub messages it received per hand-off over the cluster bus
 * (`cluster_stats_messages_publish_received` + `..._publishshard_received` of CLUSTER INFO),
 * and the messages its subscribers got (`smessage`/`message` deliveries are not counted by
 * Redis: the bus counters are what a PUBLISH broadcast costs each node). The lock's own master
 * is listed first. distlock only.
 */
import { Cluster } from 'ioredis';
import { Locker } from '../src/index.js';
import { startRedisCluster } from '../src/testing/index.js';
import { busMessages, handOff } from './cluster-bus.js';
import { table } from './report.js';

export interface ClusterWakeUpsRow {
  readonly hops: number;
  /** Per master, the lock's own first: bus pub/sub messages received per hand-off. */
  readonly busMessagesPerHandOff: readonly number[];
  readonly handOffMs: number;
}

const RETRY_DELAY_MS = 2_000;

/** Hands one lock from a holder to a waiting locker `hops` times. */
export async function clusterWakeUps({ hops = 50 } = {}): Promise<ClusterWakeUpsRow[]> {
  const cluster = await startRedisCluster({ replicasPerMaster: 0 });
  const lockers: Locker[] = [];
  try {
    const open = () => {
      const locker = new Locker({
        nodes: [new Cluster([...cluster.startupNodes])],
        retryDelayMs: RETRY_DELAY_MS,
      });
      lockers.push(locker);
      return locker;
    };
    const [holder, waiter] = [open(), open()];
    const resource = 'bench-handoff';
    const home = await cluster.masterOf(`distlock:{${resource}}`);
    const masters = [home, ...(await cluster.masters()).filter((m) => m !== home)];
    const handOffOnce = () => handOff(holder, waiter, resource, RETRY_DELAY_MS);
    await handOffOnce(); // subscribed, scripts loaded
    const before = await busMessages(masters);
    const took: number[] = [];
    for (let i = 0; i < hops; i++) took.push(await handOffOnce());
    const after = await busMessages(masters);
    took.sort((a, b) => a - b);
    return [
      {
        hops,
        busMessagesPerHandOff: after.map((n, i) => (n - (before[i] ?? 0)) / hops),
        handOffMs: Math.round((took[Math.floor(hops / 2)] ?? 0) * 100) / 100,
      },
    ];
  } finally {
    await Promise.all(lockers.map((l) => l.close()));
    await cluster.stop();
  }
}

export function clusterWakeUpsTable(rows: readonly ClusterWakeUpsRow[]): string {
  const out = rows.map((r) => [r.hops, r.busMessagesPerHandOff.join(' / '), r.handOffMs]);
  return `### 8. Wake-ups on a 3-master Redis Cluster (distlock)

Per master (the lock's own first), the pub/sub messages it received over the cluster bus per
hand-off: a \`PUBLISH\` reaches every node, an \`SPUBLISH\` only the shard's own replicas (none
here). Then the median time from a release to the waiter holding the lock.

${table(['hand-offs', 'bus messages per hand-off, per master', 'hand-off ms (median)'], out)}`;
}
