import { NoReplyError } from '../errors.js';
import type { RedisConnection } from './connection.js';

/**
 * `reply`, or a `NoReplyError` once `timeoutMs` passed without it: the connection contract
 * leaves bounding the wait for a reply to the caller, and a connection that stopped answering
 * without failing (a dead peer, a held TCP stream) would otherwise hold the caller for ever.
 */
export function replyWithin<T>(
  reply: Promise<T>,
  connection: RedisConnection,
  what: string,
  timeoutMs: number,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoReplyError(connection.name, what, timeoutMs)), timeoutMs);
  });
  return Promise.race([reply, late]).finally(() => clearTimeout(timer));
}
