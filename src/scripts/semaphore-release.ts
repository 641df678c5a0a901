import { queueKeys } from '../keys.js';
import { WAITING_LINE } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/**
 * semaphore-release — give our permit back and, for a real release, wake the first waiter
 * in line, who takes the permit with a request of its own. Undoing a failed attempt wakes
 * nobody. Also how a waiter leaves the line (`leaving`): it then holds no permit, and wakes
 * the next waiter when a permit is free.
 *
 * KEYS[1]  holders, KEYS[2] queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels
 * ARGV[1]  token
 * ARGV[2]  '1' to wake the first waiter, '0' not to
 * ARGV[3]  '1' when a waiter leaves the line, '0' for a release
 *
 * Returns 1 when we held a permit (a release) or were in line (leaving), 0 otherwise.
 */
export const semaphoreReleaseScript = defineScript({
  name: 'semaphore-release',
  keys: ({ key }: { key: string; token: string; announce: boolean; leaving?: boolean }) => {
    const { queue, deadlines, channels } = queueKeys(key);
    return [key, queue, deadlines, channels];
  },
  args: ({ token, announce, leaving }) => [token, announce ? '1' : '0', leaving ? '1' : '0'],
  parse: integerReply('semaphore-release'),
  lua: `${WAITING_LINE}
local holders = KEYS[1]
local token, announce, leaving = ARGV[1], ARGV[2] == '1', ARGV[3] == '1'

local done
if leaving then
  done = redis.call('ZREM', queue, token)
  leaveLine(token)
else
  done = redis.call('ZREM', holders, token)
end
if done == 1 and announce and redis.call('EXISTS', queue) == 1 then
  dropGone(serverMs())
  local first = firstWaiter()
  if first then
    wakeWaiter(first)
  end
end
return done
`,
});
