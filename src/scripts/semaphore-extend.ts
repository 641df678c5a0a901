import { defineScript, integerReply } from './script.js';

/**
 * semaphore-extend — set our permit to expire `ttl` from now, by the server's clock (to push
 * it out, or, for `releaseAfter`, to let it run out then). Never revives an expired permit.
 *
 * KEYS[1]  holders (see semaphore-take)
 * ARGV[1]  token
 * ARGV[2]  ttl in milliseconds, counted from now
 *
 * Returns 1 when set, 0 when we hold no permit there.
 */
export const semaphoreExtendScript = defineScript({
  name: 'semaphore-extend',
  keys: ({ key }: { key: string; token: string; ttlMs: number }) => [key],
  args: ({ token, ttlMs }) => [token, ttlMs],
  parse: integerReply('semaphore-extend'),
  lua: `
local holders = KEYS[1]
local token, ttl = ARGV[1], tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local expiry = redis.call('ZSCORE', holders, token)
if not expiry or tonumber(expiry) <= now then
  return 0
end
redis.call('ZADD', holders, now + ttl, token)
if redis.call('PTTL', holders) < ttl then
  redis.call('PEXPIRE', holders, ttl)
end
return 1
`,
});
