import { lineScriptKeys } from '../keys.js';
import { WAITING_LINE } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/**
 * release — compare-and-delete, or hand over: when the lock key still holds our token and
 * someone waits in line (see acquire-in-line), the lock goes straight to the first waiter,
 * who alone is woken (no thundering herd, and the releaser cannot barge back in ahead of the
 * line); otherwise the key is deleted. Undoing a failed attempt is silent (a plain delete):
 * the node goes back to how it was, and handing over there would split the line's order
 * across nodes.
 *
 * KEYS[1]  lock key
 * KEYS[2]  queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels (see acquire-in-line);
 *          usually absent
 * ARGV[1]  token
 * ARGV[2]  '1' to hand over to a waiter, '0' to delete silently
 *
 * Returns 1 when released (deleted or handed over), 0 when the key is gone or holds another
 * token.
 */
export const releaseScript = defineScript({
  name: 'release',
  keys: ({ key }: { key: string; token: string; announce: boolean }) => lineScriptKeys(key),
  args: ({ token, announce }) => [token, announce ? '1' : '0'],
  parse: integerReply('release'),
  lua: `${WAITING_LINE}
local lockKey, token, announce = KEYS[1], ARGV[1], ARGV[2] == '1'

if redis.call('GET', lockKey) ~= token then
  return 0
end
if not (announce and handOver(lockKey)) then
  redis.call('DEL', lockKey)
end
return 1
`,
});
