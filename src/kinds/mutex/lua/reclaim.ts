import { HOLD_VALUES, HOLDER_TTL } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';

/**
 * reclaim — after a plain `SET NX` found the key taken: when the holder is an earlier attempt
 * of the caller's own acquisition (its `SET` landed, but its reply or its undo was lost), the
 * key becomes this attempt's, with the TTL its validity counts on, so that the earlier
 * attempt's undo, should it still arrive, finds nothing of its own; otherwise report how long
 * the holder's lease still runs.
 *
 * KEYS[1]  lock key
 * ARGV[1]  token
 * ARGV[2]  attempt (see HOLD_VALUES)
 * ARGV[3]  ttl in milliseconds
 *
 * Returns 0 when the key is ours (renewed), -3 when a later attempt of ours holds it (this
 * request came late), else its PTTL: > 0 for another holder, -1 held without expiry, -2 gone
 * meanwhile.
 */
export const reclaimScript = defineScript({
  name: 'reclaim',
  keys: ({ key }: { key: string; token: string; attempt: number; ttlMs: number }) => [key],
  args: ({ token, attempt, ttlMs }) => [token, attempt, ttlMs],
  parse: integerReply('reclaim'),
  lua: `${HOLDER_TTL}${HOLD_VALUES}
local lockKey = KEYS[1]
local token, attempt, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local held = attemptOf(redis.call('GET', lockKey), token)
if held and held <= attempt then
  redis.call('SET', lockKey, holdOf(token, attempt), 'PX', ttl)
  return 0
end
if held then
  return -3
end
return holderTtl(lockKey)
`,
});
