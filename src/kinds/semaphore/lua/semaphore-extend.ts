import { EXPIRING_SET, HOLD_VALUES, SERVER_TIME } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';

/**
 * semaphore-extend — set our permit to expire `ttl` from now, by the server's clock (to push
 * it out, or, for `releaseAfter`, to let it run out then). Never revives an expired permit.
 *
 * KEYS[1]  holders (see semaphore-take)
 * ARGV[1]  token
 * ARGV[2]  attempt whose permit it is (see HOLD_VALUES)
 * ARGV[3]  ttl in milliseconds, counted from now
 *
 * A permit handed over to the holder after it got one elsewhere (the bare token) becomes
 * the attempt's.
 *
 * Returns 1 when set, 0 when we hold no permit there.
 */
export const semaphoreExtendScript = defineScript({
  name: 'semaphore-extend',
  keys: ({ key }: { key: string; token: string; attempt: number; ttlMs: number }) => [key],
  args: ({ token, attempt, ttlMs }) => [token, attempt, ttlMs],
  parse: integerReply('semaphore-extend'),
  lua: `${SERVER_TIME}${EXPIRING_SET}${HOLD_VALUES}
local holders = KEYS[1]
local token, attempt, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = serverMs()

local mine = holdOf(token, attempt)
if extendHold(holders, mine, ttl, now) == 1 then
  return 1
end
if extendHold(holders, token, ttl, now) == 1 then
  redis.call('ZREM', holders, token)
  holdUntil(holders, mine, ttl, now)
  return 1
end
return 0
`,
});
