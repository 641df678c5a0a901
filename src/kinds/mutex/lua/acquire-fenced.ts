import type { TakeReply } from '../../../engine/contract.js';
import { fenceKey } from '../../../keys.js';
import { DRAW_FENCE, HOLD_VALUES, HOLDER_TTL } from '../../../lua/fragments.js';
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

/** What a fenced acquisition asks one node for. */
export interface FencedAcquisition {
  readonly key: string;
  readonly token: string;
  readonly attempt: number;
  readonly ttlMs: number;
  /** Keep the fence at or above the node's clock (`AcquireRequest.fenceFromClock`). @default false */
  readonly fenceFromClock?: boolean;
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
 * ARGV[4]  '1' to keep the counter at or above the node's clock in µs (see DRAW_FENCE), '0'
 *
 * Returns { 0, fence } when the lock is now ours (an earlier attempt's hold that landed
 * unseen becomes this attempt's, with the TTL its validity assumes, and the counter as it
 * stands), { -3, '' } when a later attempt of ours holds it (this request came late), else
 * { holder's PTTL (or -1 without expiry), '' }. The fence is read back with GET so that it
 * crosses Lua as an exact decimal string.
 */
export const acquireFencedScript = defineScript({
  name: 'acquire-fenced',
  keys: ({ key }: FencedAcquisition) => [key, fenceKey(key)],
  args: ({ token, attempt, ttlMs, fenceFromClock }) => [
    token,
    attempt,
    ttlMs,
    fenceFromClock ? '1' : '0',
  ],
  parse: fencedReply('acquire-fenced'),
  lua: `${HOLDER_TTL}${HOLD_VALUES}${DRAW_FENCE}
local lockKey, fenceCounter = KEYS[1], KEYS[2]
local token, attempt, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local fromClock = ARGV[4] == '1'
local mine = holdOf(token, attempt)

if redis.call('SET', lockKey, mine, 'NX', 'PX', ttl) then
  return {0, drawFence(fenceCounter, fromClock)}
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
