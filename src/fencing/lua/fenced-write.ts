import { FENCE_BELOW } from '../../lua/fragments.js';
import { defineScript, integerReply } from '../../lua/script.js';

/**
 * fenced-write — store a value only if its fencing token is at least the highest this
 * resource has seen, so a holder whose lease ran out cannot overwrite a newer holder's write.
 *
 * KEYS[1]  the protected resource: a hash with fields `value` and `fence`
 * ARGV[1]  fence, a decimal integer
 * ARGV[2]  value
 *
 * Returns 1 when written, 0 when the fence was older than the stored one.
 */
export const fencedWriteScript = defineScript({
  name: 'fenced-write',
  keys: ({ key }: { key: string; fence: bigint; value: string }) => [key],
  args: ({ fence, value }) => [fence.toString(), value],
  parse: integerReply('fenced-write'),
  lua: `${FENCE_BELOW}
local resource = KEYS[1]
local fence, value = ARGV[1], ARGV[2]

local seen = redis.call('HGET', resource, 'fence')
if seen and fenceBelow(fence, seen) then
  return 0
end
redis.call('HSET', resource, 'fence', fence, 'value', value)
return 1
`,
});
