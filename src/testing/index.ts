// Node's types, kept in the emitted .d.ts: they declare `AsyncDisposable` for the handles
// below, and TypeScript 6+ no longer loads @types/node unless something asks for it.
/// <reference types="node" preserve="true" />
/**
 * distlock/testing: real Redis nodes for tests, and the faults to inject into them; and an
 * in-memory node for unit tests without a server ({@link InMemoryRedis}).
 *
 * @example
 * ```ts
 * import { startRedis } from 'distlock/testing';
 * await using redis = await startRedis({ nodes: 3 });
 * const locker = new Locker({ nodes: redis.urls });
 * redis.nodes[0].pause(); // SIGSTOP
 * ```
 */
import { rejectUnknownOptions } from '../config/option-names.js';
import { REDIS_SERVER_OPTIONS, RedisServer, type RedisServerOptions } from './redis-server.js';

export { type Fault, FaultProxy } from './fault-proxy.js';
export {
  checkHistory,
  type HistoryEvent,
  type HistoryReport,
  type Holding,
  readHistory,
  type Write,
} from './history.js';
export { InMemoryRedis, type InMemoryRedisOptions } from './in-memory-redis.js';
export { type Reaped, reapLeftoverServers } from './leftovers.js';
export { type RedisCluster, type RedisClusterOptions, startRedisCluster } from './redis-cluster.js';
export {
  type RedisSentinelGroup,
  type RedisSentinelOptions,
  startRedisSentinel,
} from './redis-sentinel.js';
export { RedisServer, type RedisServerOptions } from './redis-server.js';
export type { SlotMove } from './slot-move.js';

/** A set of independent redis-server processes started together. */
export interface RedisNodes extends AsyncDisposable {
  readonly nodes: readonly RedisServer[];
  /** `redis://127.0.0.1:<port>` of each node, in order. */
  readonly urls: readonly string[];
  /** Kills every node and removes every temp dir. */
  stop(): Promise<void>;
}

/** Starts `nodes` redis-server processes in parallel (default 1). */
export function startRedis(
  options: RedisServerOptions & { nodes?: number } = {},
): Promise<RedisNodes> {
  rejectUnknownOptions(options, [...REDIS_SERVER_OPTIONS, 'nodes'], 'startRedis');
  const { nodes: count = 1, ...server } = options;
  if (!Number.isSafeInteger(count) || count < 1) {
    throw new TypeError(`Expected \`nodes\` to be a positive integer, got \`${count}\``);
  }
  return startNodes(count, server);
}

async function startNodes(count: number, options: RedisServerOptions): Promise<RedisNodes> {
  const started = await Promise.allSettled(
    Array.from({ length: count }, () => RedisServer.start(options)),
  );
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
  };
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    nodes,
    urls: nodes.map((node) => node.url),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
