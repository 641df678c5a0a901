import { defineScript, integerReply } from './script.js';

/**
 * extend — push the expiry of a lock we still hold. Never recreates an expired key.
 *
 * KEYS[1]  lock key
 * ARGV[1]  token
 * ARGV[2]  new ttl in milliseconds, counted from now
 *
 * Returns 1 when extended, 0 when the key is gone or holds another token.
 */
export const extendScript = defineScript({
  name: 'extend',
  numberOfKeys: 1,
  parse: integerReply('extend'),
  lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`,
});
