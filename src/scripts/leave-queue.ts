import { queueKeys, releaseChannel } from '../keys.js';
import { FAIR_LINE } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/**
 * leave-queue — take a waiter out of the line (it got the lock elsewhere, or gave up). When
 * the lock is free, the waiter now first in line is told on its own channel.
 *
 * KEYS[1]  lock key
 * KEYS[2]  queue (see acquire-fair)
 * KEYS[3]  waiter deadlines (see acquire-fair)
 * ARGV[1]  token
 * ARGV[2]  release channel (see release)
 *
 * Returns 1 when the waiter was in line, 0 otherwise.
 */
export const leaveQueueScript = defineScript({
  name: 'leave-queue',
  keys: ({ key }: { key: string; token: string }) => {
    const { queue, deadlines } = queueKeys(key);
    return [key, queue, deadlines];
  },
  args: ({ key, token }) => [token, releaseChannel(key)],
  parse: integerReply('leave-queue'),
  lua: `${FAIR_LINE}
local lockKey, queue, deadlines = KEYS[1], KEYS[2], KEYS[3]
local token, channel = ARGV[1], ARGV[2]

redis.call('ZREM', deadlines, token)
if redis.call('ZREM', queue, token) == 0 then
  return 0
end
if redis.call('EXISTS', lockKey) == 0 then
  wakeFirstWaiter(queue, channel)
end
return 1
`,
});
