import { HOLD_VALUES } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';

/**
 * extend — set the expiry of a lock we still hold to `ttl` from now (to push it out, or, for
 * `releaseAfter`, to let it run out at a chosen time). Never recreates an expired key.
 *
 * KEYS[1]  lock key
 * ARGV[1]  token
 * ARGV[2]  attempt whose hold it is (see HOLD_VALUES)
 * ARGV[3]  new ttl in milliseconds, counted from now
 *
 * A hand-over that the line made to the holder after it got the lock elsewhere (the bare
 * token) becomes the attempt's hold.
 *
 * Returns 1 when set, 0 when the key is gone or holds another hold.
 */
export const extendScript = defineScript({
  name: 'extend',
  keys: ({ key }: { key: string; token: string; attempt: number; ttlMs: number }) => [key],
  args: ({ token, attempt, ttlMs }) => [token, attempt, ttlMs],
  parse: integerReply('extend'),
  lua: `${HOLD_VALUES}
local lockKey = KEYS[1]
local token, attempt, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local held = attemptOf(redis.call('GET', lockKey), token)
if held == attempt then
  return redis.call('PEXPIRE', lockKey, ttl)
end
if held == 0 then
  redis.call('SET', lockKey, holdOf(token, attempt), 'PX', ttl)
  return 1
end
return 0
`,
});
