import { mutexLineKeys } from '../../../keys.js';
import { HOLD_VALUES } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';
import { LOCK_LINE } from './lock-line.js';

/**
 * leave-queue — take a waiter out of the line: it gave up, or got the lock on a majority
 * elsewhere. When the lock was handed to a waiter that gave up, or is free, it goes to the
 * waiter now first in line (see `handOver`), so that nobody waits for a place that will not
 * be taken. A waiter that got the lock keeps it here too when it holds it (its acquisition
 * landed here after the verdict, or a hand-over did): its release deletes it. A waiter that
 * gave up passes on whatever hold of its own the node has, of any attempt: it sends this
 * last, and no attempt of its own comes after it.
 *
 * KEYS[1]  lock key
 * KEYS[2]  queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels (see acquire-in-line),
 *          KEYS[5] the line's turn (see LOCK_LINE)
 * ARGV[1]  token
 * ARGV[2]  '1' when the waiter got the lock, '0' when it gave up
 *
 * Returns 1 when the waiter was in line or had been handed the lock, 0 otherwise.
 */
export const leaveQueueScript = defineScript({
  name: 'leave-queue',
  keys: ({ key }: { key: string; token: string; granted: boolean }) => mutexLineKeys(key),
  args: ({ token, granted }) => [token, granted ? '1' : '0'],
  parse: integerReply('leave-queue'),
  lua: `${LOCK_LINE}${HOLD_VALUES}
local lockKey, token, granted = KEYS[1], ARGV[1], ARGV[2] == '1'

local wasInLine = redis.call('ZREM', queue, token) == 1
leaveLine(token)
local holder = redis.call('GET', lockKey)
if attemptOf(holder, token) then
  if granted then
    return 1
  end
  if not handOver(lockKey) then
    redis.call('DEL', lockKey)
  end
  return 1
end
if not holder then
  handOver(lockKey)
end
return wasInLine and 1 or 0
`,
});
