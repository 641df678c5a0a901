import type { RedisConnection } from './connection.js';
import {
  IORedisConnection,
  type IORedisLike,
  isIORedisLike,
  OWNED_CLIENT_OPTIONS,
  usesSentinel,
} from './ioredis.js';
import {
  IORedisClusterConnection,
  type IORedisClusterLike,
  isIORedisClusterLike,
} from './ioredis-cluster.js';
import { isNodeRedisLike, NodeRedisConnection, type NodeRedisLike } from './node-redis.js';
import {
  isNodeRedisClusterLike,
  NodeRedisClusterConnection,
  type NodeRedisClusterLike,
} from './node-redis-cluster.js';
import { type GlideClientLike, GlideConnection, isGlideClientLike } from './valkey-glide.js';
import {
  type GlideClusterClientLike,
  GlideClusterConnection,
  isGlideClusterClientLike,
} from './valkey-glide-cluster.js';

/**
 * A Redis client distlock can use directly. Each library has a small adapter in this
 * folder that turns its client into a {@link RedisConnection}: ioredis 5 and 6 and iovalkey
 * (`new Redis()`, or an ioredis `Cluster`), node-redis 5 and 6 (`createClient()` or
 * `createCluster()`, connected), valkey-glide 2 (`GlideClient.createClient()` or
 * `GlideClusterClient.createClient()`).
 */
export type RedisClient =
  | IORedisLike
  | IORedisClusterLike
  | NodeRedisLike
  | NodeRedisClusterLike
  | GlideClientLike
  | GlideClusterClientLike;

/**
 * The connection for a client the caller owns (distlock never closes it), or `undefined`
 * when `value` is no client distlock knows. One adapter per client: adapting the same
 * client again returns the same connection and adds no listeners.
 */
export function adaptClient(value: unknown): RedisConnection | undefined {
  if (isIORedisClusterLike(value)) return IORedisClusterConnection.ofCaller(value);
  if (isIORedisLike(value)) return IORedisConnection.of(value);
  if (isNodeRedisClusterLike(value)) return NodeRedisClusterConnection.ofCaller(value);
  if (isNodeRedisLike(value)) return NodeRedisConnection.of(value);
  if (isGlideClusterClientLike(value)) return GlideClusterConnection.ofCaller(value);
  if (isGlideClientLike(value)) return GlideConnection.of(value);
  return undefined;
}

/**
 * The connection a locker uses for a caller's client, and whether the locker opened it
 * (and so must close it): a Redis Cluster, or a client that follows Sentinel, gets
 * connections of distlock's own (same servers, credentials and TLS), whose failed
 * commands are never re-sent behind its back (valkey-glide's only within its
 * `requestTimeout`: see {@link GlideClusterConnection}).
 */
export function lockerConnection(
  value: unknown,
): { connection: RedisConnection; opened: boolean } | undefined {
  if (isIORedisClusterLike(value)) {
    return { connection: new IORedisClusterConnection(value), opened: true };
  }
  if (isNodeRedisClusterLike(value)) {
    return { connection: new NodeRedisClusterConnection(value), opened: true };
  }
  if (isGlideClusterClientLike(value)) {
    return { connection: new GlideClusterConnection(value), opened: true };
  }
  if (isIORedisLike(value) && usesSentinel(value)) {
    // A failover closes the connection under commands in flight; the caller's client would
    // re-send them to the new master, after the lock algorithm gave up on them.
    const name = IORedisConnection.of(value).name;
    const connection = new IORedisConnection(value.duplicate(OWNED_CLIENT_OPTIONS), name);
    return { connection, opened: true };
  }
  const connection = adaptClient(value);
  return connection && { connection, opened: false };
}

/**
 * Whether `value` is a Redis Cluster client (one lock node over several masters), of any
 * library: a keyless command such as `WAIT` cannot follow a lock write to its master there.
 */
export function isClusterClient(value: unknown): boolean {
  return (
    isIORedisClusterLike(value) || isNodeRedisClusterLike(value) || isGlideClusterClientLike(value)
  );
}

/** Whether `value` is a {@link RedisConnection} written by the caller. */
export function isRedisConnection(value: unknown): value is RedisConnection {
  const connection = value as Partial<RedisConnection> | null;
  return (
    typeof connection === 'object' &&
    connection !== null &&
    typeof connection.name === 'string' &&
    typeof connection.send === 'function' &&
    typeof connection.close === 'function'
  );
}
