import { adaptClient, isRedisConnection, type RedisClient } from '../driver/clients.js';
import type { RedisConnection } from '../driver/connection.js';
import { InvalidArgumentError } from '../errors.js';
import { validateResource } from '../options.js';
import { fencedReadScript } from '../scripts/fenced-read.js';
import { fencedWriteScript } from '../scripts/fenced-write.js';

/** How long a fenced read or write may wait for a connection that is still opening. */
const FENCED_COMMAND_TIMEOUT_MS = 5_000;

/** What {@link fencedWrite} did. */
export type FencedWriteResult = 'applied' | 'stale';

/**
 * Writes `value` to the Redis hash `key` only if `fence` is at least the highest fence that
 * key has seen, atomically (one Lua script). A writer whose lock was lost and taken over gets
 * `'stale'` and must stop: a newer holder has written.
 *
 * @example
 * ```ts
 * const lock = await locker.acquire('account:7', { ttlMs: 5_000, fencing: true });
 * const result = await fencedWrite(redis, 'account:7:balance', lock.fence!, '120');
 * ```
 */
export function fencedWrite(
  client: RedisClient | RedisConnection,
  key: string,
  fence: bigint,
  value: string,
): Promise<FencedWriteResult> {
  const connection = connect(client);
  validateKeyAndFence(key, fence);
  if (typeof value !== 'string') throw new InvalidArgumentError('value', 'a string', value);
  return fencedWriteScript
    .run(connection, { key, fence, value }, FENCED_COMMAND_TIMEOUT_MS)
    .then((applied) => (applied === 1 ? 'applied' : 'stale'));
}

/**
 * Reads a fenced value for read-modify-write under a lock: atomically claims the resource
 * for `fence` (older fences can no longer write) and returns the value, or `'stale'` when a
 * newer holder already claimed it. Pair it with {@link fencedWrite} using the same fence.
 */
export function fencedRead(
  client: RedisClient | RedisConnection,
  key: string,
  fence: bigint,
): Promise<{ value: string | null } | 'stale'> {
  const connection = connect(client);
  validateKeyAndFence(key, fence);
  return fencedReadScript
    .run(connection, { key, fence }, FENCED_COMMAND_TIMEOUT_MS)
    .then(({ claimed, value }) => (claimed ? { value } : 'stale'));
}

/** Reads what {@link fencedWrite} stored: the value and the fence it was written with. */
export function readFenced(
  client: RedisClient | RedisConnection,
  key: string,
): Promise<{ value: string | null; fence: bigint | null }> {
  const connection = connect(client);
  validateKey(key);
  return connection
    .send('HMGET', [key, 'value', 'fence'], FENCED_COMMAND_TIMEOUT_MS)
    .then((reply) => {
      const [value = null, fence = null] = Array.isArray(reply) ? (reply as (string | null)[]) : [];
      return { value, fence: fence === null ? null : BigInt(fence) };
    });
}

function validateKey(key: unknown): void {
  validateResource(key, 'key'); // the same rules: two keys must never map to one
}

function validateKeyAndFence(key: unknown, fence: unknown): void {
  validateKey(key);
  if (typeof fence !== 'bigint' || fence < 0n) {
    throw new InvalidArgumentError('fence', 'a bigint >= 0 (lock.fence)', fence);
  }
}

function connect(client: RedisClient | RedisConnection): RedisConnection {
  const connection = adaptClient(client) ?? (isRedisConnection(client) ? client : undefined);
  if (connection) return connection;
  throw new InvalidArgumentError('client', 'a Redis client or a RedisConnection', client);
}
