import type { RedisConnection } from './connection.js';
import { IORedisConnection, type IORedisLike, isIORedisLike } from './ioredis.js';

/**
 * A Redis client distlock can use directly. Each library has a small adapter in this
 * folder that turns its client into a {@link RedisConnection}.
 */
export type RedisClient = IORedisLike;

/**
 * The connection for a client the caller owns (distlock never closes it), or `undefined`
 * when `value` is no client distlock knows. One adapter per client: adapting the same
 * client again returns the same connection and adds no listeners.
 */
export function adaptClient(value: unknown): RedisConnection | undefined {
  if (isIORedisLike(value)) return IORedisConnection.of(value);
  return undefined;
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
