import { defineScript, integerReply } from './script.js';

/**
 * extend — set the expiry of a lock we still hold to `ttl` from now (to push it out, or, for
 * `releaseAfter`, to let it run out at a chosen time). Never recreates an expired key.
 *
 * KEYS[1]  lock key
 * ARGV[1]  token
 * ARGV[2]  new ttl in milliseconds, counted from now
 *
 * Returns 1 when set, 0 when the key is gone or holds another token.
 */
export const extendScript = defineScript({
  name: 'extend',
  keys: ({ key }: { key: string; token: string; ttlMs: number }) => [key],
  args: ({ token, ttlMs }) => [token, ttlMs],
  parse: integerReply('extend'),
  lua: `
local lockKey = KEYS[1]
local token, ttl = ARGV[1], ARGV[2]

if redis.call('GET', lockKey) == token then
  return redis.call('PEXPIRE', lockKey, ttl)
end
return 0
`,
});
