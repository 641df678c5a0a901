import { namesOf, rejectUnknownOptions } from '../config/option-names.js';
import { RedisServer } from './redis-server.js';
import { replicationProgress } from './sentinel-checks.js';
import { LiveSentinelGroup } from './sentinel-group.js';
import { until } from './until.js';

/** Options of {@link startRedisSentinel}. */
export interface RedisSentinelOptions {
  /** The name the sentinels monitor the master under (ioredis: `name`). @default 'distlock' */
  masterName?: string;
  /** Data nodes replicating the master. Minimum 0 (then nothing can take over). @default 1 */
  replicas?: number;
  /** Sentinel processes. A failover needs a majority of them running. Minimum 1. @default 3 */
  sentinels?: number;
  /**
   * Sentinels that must find the master down before a failover starts. Between 1 and
   * `sentinels`. @default a majority of `sentinels`
   */
  quorum?: number;
  /**
   * `down-after-milliseconds`: how long the master may not answer before a sentinel finds it
   * down. A killed master is replaced about 1 to 2 s after this. Minimum 1.
   * @default 1000
   */
  downAfterMs?: number;
  /**
   * `failover-timeout`: how long a failover may take before it is given up. A sentinel
   * tries again only after twice this, e.g. when no sentinel won the election. Minimum 1.
   * @default 3000
   */
  failoverTimeoutMs?: number;
}

const SENTINEL_OPTIONS = namesOf<RedisSentinelOptions>({
  masterName: true,
  replicas: true,
  sentinels: true,
  quorum: true,
  downAfterMs: true,
  failoverTimeoutMs: true,
});

/**
 * A master, its replicas and the Sentinel processes monitoring them, all real `redis-server`
 * processes on loopback ports. Faults are the nodes' own: `kill()`, `pause()`, `restart()`.
 * A restarted sentinel keeps its rewritten config (and so what it knew), and gets its shortened
 * periods back from the next `waitUntilHealthy()` or `failover()`; a restarted data node comes
 * back empty with its first role (a replica of the first master), and the sentinels then point
 * it at the current master.
 */
export interface RedisSentinelGroup extends AsyncDisposable {
  /** The name the sentinels monitor the master under. */
  readonly masterName: string;
  /** The data nodes: the first master, then the replicas. Failovers change roles since. */
  readonly servers: readonly RedisServer[];
  /** The Sentinel processes (`redis-server --sentinel`). */
  readonly sentinels: readonly RedisServer[];
  /** `{ host, port }` of every sentinel, e.g. for ioredis: `{ sentinels, name }`. */
  readonly sentinelAddresses: readonly { host: string; port: number }[];
  /**
   * The master as `SENTINEL GET-MASTER-ADDR-BY-NAME` reports it (by most of the running,
   * unpaused sentinels): possibly a node just killed and not yet replaced.
   */
  master(): Promise<RedisServer>;
  /** The data nodes other than {@link master}, including any that are down. */
  replicas(): Promise<RedisServer[]>;
  /**
   * Sends `SENTINEL FAILOVER` to a sentinel, then waits until every unpaused sentinel reports
   * a new master and the group is healthy again (see {@link waitUntilHealthy}): the new master
   * reports role:master, and the old master, if running, is in sync as its replica, which the
   * sentinels too see, so that the next fault finds it a candidate. Returns the new master.
   * Rejects at once if a failover is under way or no replica qualifies (`NOGOODSLAVE`).
   * @default timeoutMs max(10000, 10 × downAfterMs)
   */
  failover(timeoutMs?: number): Promise<RedisServer>;
  /**
   * Waits until every running, unpaused sentinel agrees on the master and finds it up, sees
   * every other such sentinel, and sees every running, unpaused data node as a replica of it
   * with its link up; and the nodes themselves report those roles, in sync.
   * @default timeoutMs max(10000, 10 × downAfterMs)
   */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** Kills every process and removes every temp dir. Safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Data-node settings. A full sync goes through an RDB file in the node's dir, deleted once
 * loaded (so a restarted node still starts empty): with diskless sync, Redis 7.0 may stream
 * writes to a new replica only from its next REPLCONF ACK, up to 1 s after the link is up, and
 * a failover in that second loses them. Left at their defaults: `min-replicas-to-write` 0, as
 * a master refusing writes without a linked replica would stop the group whenever its only
 * replica is down, as right after a failover whose old master was killed;
 * `replica-serve-stale-data` yes, which only concerns reads sent to a replica, and a client in
 * Sentinel mode talks to the master.
 */
const DATA_NODE_ARGS = ['--repl-diskless-sync', 'no', '--rdb-del-sync-files', 'yes'];

/**
 * Starts a master, `replicas` replicas and `sentinels` sentinels monitoring them, and waits
 * until the group is healthy (in about 0.8 s).
 *
 * @example
 * ```ts
 * await using group = await startRedisSentinel();
 * const client = new Redis({ sentinels: [...group.sentinelAddresses], name: group.masterName });
 * await (await group.master()).kill(); // a replica takes over a few seconds later
 * ```
 */
export async function startRedisSentinel(
  options: RedisSentinelOptions = {},
): Promise<RedisSentinelGroup> {
  rejectUnknownOptions(options, SENTINEL_OPTIONS, 'startRedisSentinel');
  const masterName = options.masterName ?? 'distlock';
  if (!/^[\w.:-]+$/.test(masterName)) {
    throw new TypeError(
      `Expected \`masterName\` to be a word like 'distlock', got \`${masterName}\` (${typeof masterName})`,
    );
  }
  const replicas = count('replicas', options.replicas ?? 1, 0);
  const sentinels = count('sentinels', options.sentinels ?? 3, 1);
  const quorum = count('quorum', options.quorum ?? Math.floor(sentinels / 2) + 1, 1, sentinels);
  const downAfterMs = count('downAfterMs', options.downAfterMs ?? 1000, 1);
  const failoverTimeoutMs = count('failoverTimeoutMs', options.failoverTimeoutMs ?? 3000, 1);

  const waitMs = Math.max(10_000, 10 * downAfterMs);
  const servers: RedisServer[] = [];
  const sentinelNodes: RedisServer[] = [];
  const group = new LiveSentinelGroup(masterName, servers, sentinelNodes, waitMs);
  try {
    const master = await RedisServer.start({ args: DATA_NODE_ARGS });
    servers.push(master);
    const replicaArgs = [...DATA_NODE_ARGS, '--replicaof', '127.0.0.1', String(master.port)];
    await startEach(replicas, () => RedisServer.start({ args: replicaArgs }), servers);
    // Sentinels started now see every replica's link up at their first INFO; else they would
    // look again only a second later.
    await until(
      'the replicas to sync',
      () => replicationProgress(master, servers.slice(1)),
      waitMs,
    );
    const config = [
      `sentinel monitor ${masterName} 127.0.0.1 ${master.port} ${quorum}`,
      `sentinel down-after-milliseconds ${masterName} ${downAfterMs}`,
      `sentinel failover-timeout ${masterName} ${failoverTimeoutMs}`,
      // Nothing reads from the replicas, so all may resync with a new master at once.
      `sentinel parallel-syncs ${masterName} ${Math.max(1, replicas)}`,
      '',
    ].join('\n');
    await startEach(
      sentinels,
      () => RedisServer.start({ config, args: ['--sentinel'] }),
      sentinelNodes,
    );
    await group.waitUntilHealthy();
    return group;
  } catch (error) {
    await group.stop();
    throw error;
  }
}

function count(name: string, value: number, minimum: number, maximum = Infinity): number {
  if (!Number.isSafeInteger(value) || value < minimum || value > maximum) {
    const range = maximum === Infinity ? `>= ${minimum}` : `from ${minimum} to ${maximum}`;
    throw new TypeError(
      `Expected \`${name}\` to be an integer ${range}, got \`${value}\` (${typeof value})`,
    );
  }
  return value;
}

/** Starts `n` nodes in parallel into `started`, then throws the first failure, if any. */
async function startEach(n: number, start: () => Promise<RedisServer>, started: RedisServer[]) {
  const results = await Promise.allSettled(Array.from({ length: n }, start));
  for (const result of results) if (result.status === 'fulfilled') started.push(result.value);
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}
