import { HOLDER_TTL } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/**
 * reclaim — after a plain `SET NX` found the key taken: when the holder is the caller itself
 * (an earlier attempt's `SET` landed, but its reply or its undo was lost), renew the TTL the
 * new attempt's validity counts on; otherwise report how long the holder's lease still runs.
 *
 * KEYS[1]  lock key
 * ARGV[1]  token
 * ARGV[2]  ttl in milliseconds
 *
 * Returns 0 when the key is ours (renewed), else its PTTL: > 0 for another holder, -1 held
 * without expiry, -2 gone meanwhile.
 */
export const reclaimScript = defineScript({
  name: 'reclaim',
  keys: ({ key }: { key: string; token: string; ttlMs: number }) => [key],
  args: ({ token, ttlMs }) => [token, ttlMs],
  parse: integerReply('reclaim'),
  lua: `${HOLDER_TTL}
local lockKey = KEYS[1]
local token, ttl = ARGV[1], ARGV[2]

if redis.call('GET', lockKey) == token then
  redis.call('PEXPIRE', lockKey, ttl)
  return 0
end
return holderTtl(lockKey)
`,
});
