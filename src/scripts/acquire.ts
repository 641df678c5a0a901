import { defineScript, integerReply } from './script.js';

/**
 * acquire — take the lock if it is free.
 *
 * KEYS[1]  lock key
 * ARGV[1]  token (random, unique to this acquisition)
 * ARGV[2]  ttl in milliseconds
 *
 * Returns 0 when the key is now ours: newly set, or already holding our token (a retried
 * request whose first copy landed), in which case its TTL is renewed. Otherwise returns the
 * current holder's remaining TTL in ms (> 0), or -1 when the key has no expiry.
 */
export const acquireScript = defineScript({
  name: 'acquire',
  numberOfKeys: 1,
  parse: integerReply('acquire'),
  lua: `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 0
end
return redis.call('PTTL', KEYS[1])
`,
});
