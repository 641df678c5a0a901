import { defineScript, integerReply } from './script.js';

/**
 * raise-fence — while we hold the lock, lift the resource's fence counter to at least F, so
 * that any later majority (which must share a node with ours) draws a larger fence.
 *
 * KEYS[1]  lock key
 * KEYS[2]  fence counter
 * ARGV[1]  token
 * ARGV[2]  F, a decimal integer (compared as a string of digits: exact at any size)
 *
 * Returns 1 when the counter is now >= F and the lock is still ours, 0 when the lock is not.
 */
export const raiseFenceScript = defineScript({
  name: 'raise-fence',
  numberOfKeys: 2,
  parse: integerReply('raise-fence'),
  lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local current = redis.call('GET', KEYS[2]) or '0'
if #current < #ARGV[2] or (#current == #ARGV[2] and current < ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
return 1
`,
});
