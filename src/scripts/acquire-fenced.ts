import { fenceKey } from '../keys.js';
import { HOLDER_TTL } from './lua-fragments.js';
import { defineScript } from './script.js';

/** Reply of the acquisition scripts: `state` as in acquire-in-line, and the node's fence. */
export interface FencedReply {
  state: number;
  /** The node's fence counter after this acquisition (decimal), '' when not acquired. */
  fence: string;
}

/** Parses `{ state, fence }` from an acquisition script. */
export function fencedReply(script: string) {
  return (reply: unknown): FencedReply => {
    const [state, fence] = Array.isArray(reply) ? reply : [];
    if (typeof state !== 'number' || typeof fence !== 'string') {
      throw new Error(`unexpected reply from script ${script}: ${String(reply)}`);
    }
    return { state, fence };
  };
}

/**
 * acquire-fenced — take the lock if it is free and, in the same step, draw the next fencing
 * token from the resource's counter.
 *
 * KEYS[1]  lock key
 * KEYS[2]  fence counter (never expires; only grows)
 * ARGV[1]  token
 * ARGV[2]  ttl in milliseconds
 *
 * Returns { 0, fence } when the lock is now ours (a retried request that already landed gets
 * its TTL renewed, as the new attempt's validity assumes, and the counter as it stands),
 * else { holder's PTTL (or -1 without expiry), '' }. The fence is read back with GET so that
 * it crosses Lua as an exact decimal string.
 */
export const acquireFencedScript = defineScript({
  name: 'acquire-fenced',
  keys: ({ key }: { key: string; token: string; ttlMs: number }) => [key, fenceKey(key)],
  args: ({ token, ttlMs }) => [token, ttlMs],
  parse: fencedReply('acquire-fenced'),
  lua: `${HOLDER_TTL}
local lockKey, fenceCounter = KEYS[1], KEYS[2]
local token, ttl = ARGV[1], ARGV[2]

if redis.call('SET', lockKey, token, 'NX', 'PX', ttl) then
  redis.call('INCR', fenceCounter)
  return {0, redis.call('GET', fenceCounter)}
end
if redis.call('GET', lockKey) == token then
  redis.call('PEXPIRE', lockKey, ttl)
  return {0, redis.call('GET', fenceCounter) or '0'}
end
return {holderTtl(lockKey), ''}
`,
});
