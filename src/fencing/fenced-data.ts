import { validateResource } from '../config/options.js';
import { adaptClient, isRedisConnection, type RedisClient } from '../driver/clients.js';
import type { RedisConnection } from '../driver/connection.js';
import { replyWithin } from '../driver/reply-within.js';
import { ForeignDataError, InvalidArgumentError } from '../errors.js';
import { fencedReadScript } from './lua/fenced-read.js';
import { fencedWriteScript } from './lua/fenced-write.js';

/**
 * How long a fenced read or write waits, by default, for its connection to be ready and then
 * for the reply.
 */
const FENCED_COMMAND_TIMEOUT_MS = 5_000;

/** Options of the fenced commands. */
export interface FencedCommandOptions {
  /**
   * How long to wait for the connection and the reply (ms, default 5,000). Past it the call
   * rejects with a `NoReplyError`: the command may or may not have run.
   */
  readonly timeoutMs?: number;
}

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
  options: FencedCommandOptions = {},
): Promise<FencedWriteResult> {
  const connection = connect(client);
  validateKeyAndFence(key, fence);
  if (typeof value !== 'string') throw new InvalidArgumentError('value', 'a string', value);
  const timeoutMs = timeoutOf(options);
  const write = fencedWriteScript.run(connection, { key, fence, value }, timeoutMs);
  return replyWithin(write, connection, `a fenced write of "${key}"`, timeoutMs).then(
    (result) => {
      if (typeof result === 'string') return result;
      throw foreignFence(key, result.foreignFence);
    },
    (error: unknown) => rejectForeign(key, error),
  );
}

/**
 * Reads a fenced value to update it under a lock (like SQL's `SELECT ... FOR UPDATE`):
 * atomically claims the key for `fence`, so that older fences can no longer write, and returns
 * the value; `'stale'` when a newer holder already claimed it. Pair it with
 * {@link fencedWrite} using the same fence. To look without claiming, use {@link fencedPeek}.
 */
export function fencedReadForUpdate(
  client: RedisClient | RedisConnection,
  key: string,
  fence: bigint,
  options: FencedCommandOptions = {},
): Promise<{ value: string | null } | 'stale'> {
  const connection = connect(client);
  validateKeyAndFence(key, fence);
  const timeoutMs = timeoutOf(options);
  const read = fencedReadScript.run(connection, { key, fence }, timeoutMs);
  return replyWithin(read, connection, `a fenced read of "${key}"`, timeoutMs).then(
    ({ claimed, value, foreignFence: odd }) => {
      if (odd !== undefined) throw foreignFence(key, odd);
      return claimed ? { value } : 'stale';
    },
    (error: unknown) => rejectForeign(key, error),
  );
}

/**
 * Looks at what {@link fencedWrite} stored: the value and the fence it was written with.
 * Claims nothing and needs no lock: for monitoring, or to show a value.
 */
export function fencedPeek(
  client: RedisClient | RedisConnection,
  key: string,
  options: FencedCommandOptions = {},
): Promise<{ value: string | null; fence: bigint | null }> {
  const connection = connect(client);
  validateKey(key);
  const timeoutMs = timeoutOf(options);
  const read = connection.send('HMGET', [key, 'value', 'fence'], timeoutMs);
  return replyWithin(read, connection, `a read of "${key}"`, timeoutMs).then(
    (reply) => {
      const [value = null, fence = null] = Array.isArray(reply) ? (reply as (string | null)[]) : [];
      if (fence !== null && !/^(0|[1-9]\d*)$/.test(fence)) throw foreignFence(key, fence);
      return { value, fence: fence === null ? null : BigInt(fence) };
    },
    (error: unknown) => rejectForeign(key, error),
  );
}

/** @deprecated Renamed {@link fencedReadForUpdate}: it claims the key, which a read does not. */
export const fencedRead = fencedReadForUpdate;

/** @deprecated Renamed {@link fencedPeek}: it only looks. */
export const readFenced = fencedPeek;

/** Redis refused the command because `key` holds another type than a hash. */
function rejectForeign(key: string, error: unknown): never {
  if (error instanceof Error && error.message.includes('WRONGTYPE')) {
    throw new ForeignDataError(key, 'a value of another type than a hash (WRONGTYPE)');
  }
  throw error;
}

function foreignFence(key: string, fence: string): ForeignDataError {
  return new ForeignDataError(key, `a hash with fence ${JSON.stringify(fence.slice(0, 40))}`);
}

function timeoutOf(options: FencedCommandOptions): number {
  const { timeoutMs = FENCED_COMMAND_TIMEOUT_MS } = options ?? {};
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new InvalidArgumentError('timeoutMs', 'a finite number of ms > 0', timeoutMs);
  }
  return timeoutMs;
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
