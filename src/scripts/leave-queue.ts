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
  numberOfKeys: 3,
  parse: integerReply('leave-queue'),
  lua: `
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
  return 0
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if first[2] then
    redis.call('PUBLISH', ARGV[2] .. ':' .. first[2], '')
  end
end
return 1
`,
});
