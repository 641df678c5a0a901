import { defineScript, integerReply } from './script.js';

/**
 * release — compare-and-delete: delete the lock key only if it still holds our token, and
 * (unless ARGV[3] is '0') announce it: on the resource's channel (plain waiters race for the
 * lock) and, when fair waiters are in line, on the first one's own channel (only it may take
 * the lock next). Undoing a failed attempt is silent: the node goes back to how it was, and a
 * waiter woken by its own undo would retry at once, again and again.
 *
 * KEYS[1]  lock key
 * KEYS[2]  fair waiting line (see acquire-fair); usually absent
 * ARGV[1]  token
 * ARGV[2]  release channel; the first fair waiter's channel is `<ARGV[2]>:<its ticket>`
 * ARGV[3]  '1' to announce the release, '0' to delete silently
 *
 * Returns 1 when deleted, 0 when the key is gone or holds another token.
 */
export const releaseScript = defineScript({
  name: 'release',
  numberOfKeys: 2,
  parse: integerReply('release'),
  lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if ARGV[3] == '0' then
  return 1
end
redis.call('PUBLISH', ARGV[2], '')
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] then
  redis.call('PUBLISH', ARGV[2] .. ':' .. first[2], '')
end
return 1
`,
});
