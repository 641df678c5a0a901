import { defineScript, integerReply } from './script.js';

/**
 * leave-queue — take a waiter out of the line (it got the lock elsewhere, or gave up).
 *
 * KEYS[1]  queue (see acquire-fair)
 * KEYS[2]  waiter deadlines (see acquire-fair)
 * ARGV[1]  token
 *
 * Returns 1 when the waiter was in line, 0 otherwise.
 */
export const leaveQueueScript = defineScript({
  name: 'leave-queue',
  numberOfKeys: 2,
  parse: integerReply('leave-queue'),
  lua: `
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
`,
});
