import { queueKeys, releaseChannel } from '../keys.js';
import { FAIR_LINE } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/**
 * release — compare-and-delete: delete the lock key only if it still holds our token, and
 * (unless told to be silent) announce it: on the resource's channel (plain waiters race for
 * the lock) and, when fair waiters are in line, on the first one's own channel (only it may
 * take the lock next). Undoing a failed attempt is silent: the node goes back to how it was,
 * and a waiter woken by its own undo would retry at once, again and again.
 *
 * KEYS[1]  lock key
 * KEYS[2]  fair waiting line (see acquire-fair); usually absent
 * ARGV[1]  token
 * ARGV[2]  release channel
 * ARGV[3]  '1' to announce the release, '0' to delete silently
 *
 * Returns 1 when deleted, 0 when the key is gone or holds another token.
 */
export const releaseScript = defineScript({
  name: 'release',
  keys: ({ key }: { key: string; token: string; announce: boolean }) => [key, queueKeys(key).queue],
  args: ({ key, token, announce }) => [token, releaseChannel(key), announce ? '1' : '0'],
  parse: integerReply('release'),
  lua: `${FAIR_LINE}
local lockKey, queue = KEYS[1], KEYS[2]
local token, channel, announce = ARGV[1], ARGV[2], ARGV[3] == '1'

if redis.call('GET', lockKey) ~= token then
  return 0
end
redis.call('DEL', lockKey)
if announce then
  redis.pcall('PUBLISH', channel, '') -- may fail (no channel access): the delete stands
  wakeFirstWaiter(queue, channel)
end
return 1
`,
});
