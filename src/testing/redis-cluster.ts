import { namesOf, rejectUnknownOptions } from '../config/option-names.js';
import { LiveCluster } from './cluster-group.js';
import { freePort } from './ports.js';
import { RedisServer } from './redis-server.js';
import type { SlotMove } from './slot-move.js';

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /**
   * Shards: masters splitting the 16384 slots evenly. A killed master is replaced only by a
   * majority vote of the masters, so automatic failover needs 3 or more. Minimum 1.
   * @default 3
   */
  masters?: number;
  /** Replicas following each master. Minimum 0. @default 1 */
  replicasPerMaster?: number;
  /**
   * `cluster-node-timeout`: how long a node may not answer before it counts as failing. Small,
   * so that a killed master's replica takes over within about two of these. Minimum 1.
   * @default 1000
   */
  nodeTimeoutMs?: number;
  /**
   * Extra `redis-server` arguments for every node. They come last, so they override the
   * fixture's own, e.g. `['--cluster-require-full-coverage', 'yes']`.
   */
  args?: readonly string[];
}

const CLUSTER_OPTIONS = namesOf<RedisClusterOptions>({
  masters: true,
  replicasPerMaster: true,
  nodeTimeoutMs: true,
  args: true,
});

/**
 * A Redis Cluster of real `redis-server` processes on loopback ports. Faults are the nodes'
 * own: `kill()`, `pause()`, `restart()`. A restarted node keeps its temp dir and so its
 * `nodes.conf`: it rejoins under its old id, with empty memory, and a former master whose
 * replica took over meanwhile comes back as that replica's replica. Call
 * {@link RedisCluster.waitUntilHealthy} after a restart.
 */
export interface RedisCluster extends AsyncDisposable {
  /**
   * Every node. At the start the first `masters` nodes are the masters and the replica at
   * `nodes[masters + k]` follows master `k % masters`; failovers change roles since.
   */
  readonly nodes: readonly RedisServer[];
  /** `{ host, port }` of every node, e.g. for `new Cluster(startupNodes)` (ioredis). */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** The masters owning slots now, in slot order, as the first node that answers sees them. */
  masters(): Promise<RedisServer[]>;
  /** The master owning `key`'s slot now (possibly a node just killed and not yet replaced). */
  masterOf(key: string): Promise<RedisServer>;
  /** The replicas the cluster lists for `master` (one killed moments ago may still be listed). */
  replicasOf(master: RedisServer): Promise<RedisServer[]>;
  /**
   * Sends `CLUSTER FAILOVER [mode]` to `replica`, then waits until it is a master and the
   * cluster is healthy again. `FORCE` skips the handshake with a dead master; `TAKEOVER` also
   * the vote of the other masters.
   */
  failover(replica: RedisServer, mode?: 'FORCE' | 'TAKEOVER'): Promise<void>;
  /**
   * Waits until every running node reports `cluster_state:ok` with all slots served, knows
   * every node, sees no running node as failing, agrees with the others on who is master of
   * which slots (all of them running) and who replicates whom, and, if a replica, is in sync
   * with its master. Paused nodes count as down.
   * @default timeoutMs max(10000, 10 × nodeTimeoutMs)
   */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /**
   * Moves the hash slot `slot` and its keys to the master `to`, as `redis-cli --cluster
   * reshard` does: `CLUSTER SETSLOT <slot> IMPORTING` on `to`, `MIGRATING` on the slot's
   * master, `MIGRATE` of each of its keys, then `SETSLOT <slot> NODE` on every master. Resolves
   * once every node agrees on the new owner; the old one then answers `MOVED`.
   *
   * @example
   * ```ts
   * import calculateSlot from 'cluster-key-slot';
   * const [, other] = await cluster.masters();
   * await cluster.moveSlot(calculateSlot('distlock:{job}'), other);
   * ```
   */
  moveSlot(slot: number, to: RedisServer): Promise<void>;
  /**
   * Begins moving `slot` to the master `to` and stops half-way, to test a reshard in
   * progress: the slot is `MIGRATING` on its master and `IMPORTING` on `to`, its keys not
   * moved yet. `moveKeys()` moves them (commands on them then get `ASK`), `finish()` completes
   * the move as {@link RedisCluster.moveSlot} does. See {@link SlotMove} for what commands
   * get meanwhile.
   */
  beginSlotMove(slot: number, to: RedisServer): Promise<SlotMove>;
  /** Kills every node and removes every temp dir. Safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Starts a Redis Cluster (3 masters with 1 replica each by default) and waits until it is
 * healthy.
 *
 * @example
 * ```ts
 * await using cluster = await startRedisCluster();
 * const client = new Cluster([...cluster.startupNodes]);
 * const master = await cluster.masterOf('lock:a');
 * const [replica] = await cluster.replicasOf(master);
 * await master.kill(); // its replica takes over after about 2 × nodeTimeoutMs
 * ```
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  rejectUnknownOptions(options, CLUSTER_OPTIONS, 'startRedisCluster');
  const masters = checkedInteger('masters', options.masters ?? 3, 1);
  const replicasPerMaster = checkedInteger('replicasPerMaster', options.replicasPerMaster ?? 1, 0);
  const nodeTimeoutMs = checkedInteger('nodeTimeoutMs', options.nodeTimeoutMs ?? 1000, 1);
  const args = [
    ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
    ...['--cluster-node-timeout', String(nodeTimeoutMs)],
    // Shards stay independent: with a shard's master down (and no replica promoted yet, or
    // none to promote), the other shards keep serving their keys, as lock tests expect.
    ...['--cluster-require-full-coverage', 'no'],
    // A replica may take over however long its master was paused or it was itself down.
    ...['--cluster-replica-validity-factor', '0'],
    // The default waits 5 s for more replicas before the first sync to one.
    ...['--repl-diskless-sync-delay', '0'],
    ...(options.args ?? []),
  ];
  const started = await Promise.allSettled(
    Array.from({ length: masters * (1 + replicasPerMaster) }, () => startNode(args)),
  );
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const cluster = new LiveCluster(
    nodes.map((n) => n.server),
    Math.max(10_000, 10 * nodeTimeoutMs),
  );
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    await cluster.create(masters, new Map(nodes.map((n) => [n.server, n.busPort])));
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

function checkedInteger(name: string, value: number, minimum: number): number {
  if (!Number.isSafeInteger(value) || value < minimum) {
    throw new TypeError(
      `Expected \`${name}\` to be an integer >= ${minimum}, got \`${value}\` (${typeof value})`,
    );
  }
  return value;
}

/** The bus port is chosen here since the default, port + 10000, may be taken or too high. */
async function startNode(args: readonly string[]) {
  for (let tries = 1; ; tries++) {
    const busPort = await freePort();
    try {
      const server = await RedisServer.start({
        args: ['--cluster-port', String(busPort), ...args],
      });
      return { server, busPort };
    } catch (error) {
      if (tries >= 5 || !/in use/i.test(String(error))) throw error;
    }
  }
}
