import { defineScript, integerReply } from './script.js';

/**
 * fenced-write — store a value only if its fencing token is at least the highest this
 * resource has seen, so a holder whose lease ran out cannot overwrite a newer holder's write.
 *
 * KEYS[1]  the protected resource: a hash with fields `value` and `fence`
 * ARGV[1]  fence, a decimal integer (compared as digits: exact at any size)
 * ARGV[2]  value
 *
 * Returns 1 when written, 0 when the fence was older than the stored one.
 */
export const fencedWriteScript = defineScript({
  name: 'fenced-write',
  numberOfKeys: 1,
  parse: integerReply('fenced-write'),
  lua: `
local seen = redis.call('HGET', KEYS[1], 'fence')
if seen and (#seen > #ARGV[1] or (#seen == #ARGV[1] and seen > ARGV[1])) then
  return 0
end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'value', ARGV[2])
return 1
`,
});
