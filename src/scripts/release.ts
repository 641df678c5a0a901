import { defineScript, integerReply } from './script.js';

/**
 * release — compare-and-delete: delete the lock key only if it still holds our token.
 *
 * KEYS[1]  lock key
 * ARGV[1]  token
 * ARGV[2]  channel to publish the release on (wakes waiters at once)
 *
 * Returns 1 when deleted, 0 when the key is gone or holds another token.
 */
export const releaseScript = defineScript({
  name: 'release',
  numberOfKeys: 1,
  parse: integerReply('release'),
  lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], '')
  return 1
end
return 0
`,
});
