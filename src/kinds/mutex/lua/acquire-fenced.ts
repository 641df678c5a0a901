import type { TakeReply } from '../../../engine/contract.js';
import { fenceKey } from '../../../keys.js';
import { HOLD_VALUES, HOLDER_TTL } from '../../../lua/fragments.js';
import { defineScript } from '../../../lua/script.js';

/** Parses `{ state, fence }` from an acquisition script. */
export function fencedReply(script: string) {
  return (reply: unknown): TakeReply => {
    const [state, fence] = Array.isArray(reply) ? reply : [];
    if (typeof state !== 'number' || typeof fence !== 'string') {
      throw new Error(`unexpected reply from script ${script}: ${String(reply)}`);
    }
    return fence === '' ? { state } : { state, fence: BigInt(fence) };
  };
}

/**
 * acquire-fenced — take the lock if it is free and, in the same step, draw the next fencing
 * token from the resource's counter.
 *
 * KEYS[1]  lock key
 * KEYS[2]  fence counter (never expires; only grows)
 * ARGV[1]  token
 * ARGV[2]  attempt (see HOLD_VALUES)
 * ARGV[3]  ttl in milliseconds
 *
 * Returns { 0, fence } when the lock is now ours (an earlier attempt's hold that landed
 * unseen becomes this attempt's, with the TTL its validity assumes, and the counter as it
 * stands), { -3, '' } when a later attempt of ours holds it (this request came late), else
 * { holder's PTTL (or -1 without expiry), '' }. The fence is read back with GET so that it
 * crosses Lua as an exact decimal string.
 */
export const acquireFencedScript = defineScript({
  name: 'acquire-fenced',
  keys: ({ key }: { key: string; token: string; attempt: number; ttlMs: number }) => [
    key,
    fenceKey(key),
  ],
  args: ({ token, attempt, ttlMs }) => [token, attempt, ttlMs],
  parse: fencedReply('acquire-fenced'),
  lua: `${HOLDER_TTL}${HOLD_VALUES}
local lockKey, fenceCounter = KEYS[1], KEYS[2]
local token, attempt, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local mine = holdOf(token, attempt)

if redis.call('SET', lockKey, mine, 'NX', 'PX', ttl) then
  redis.call('INCR', fenceCounter)
  return {0, redis.call('GET', fenceCounter)}
end
local held = attemptOf(redis.call('GET', lockKey), token)
if held and held <= attempt then
  redis.call('SET', lockKey, mine, 'PX', ttl)
  return {0, redis.call('GET', fenceCounter) or '0'}
end
if held then
  return {-3, ''}
end
return {holderTtl(lockKey), ''}
`,
});
