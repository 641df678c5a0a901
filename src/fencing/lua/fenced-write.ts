import { FENCE_BELOW, IS_FENCE } from '../../lua/fragments.js';
import { defineScript } from '../../lua/script.js';

/**
 * fenced-write — store a value only if its fencing token is at least the highest this
 * resource has seen, so a holder whose lease ran out cannot overwrite a newer holder's write.
 *
 * KEYS[1]  the protected resource: a hash with fields `value` and `fence`
 * ARGV[1]  fence, a decimal integer
 * ARGV[2]  value
 *
 * Returns 1 when written, 0 when the fence was older than the stored one, and the stored
 * fence itself (a string) when it is not a decimal integer: another program wrote the key.
 */
export const fencedWriteScript = defineScript({
  name: 'fenced-write',
  keys: ({ key }: { key: string; fence: bigint; value: string }) => [key],
  args: ({ fence, value }) => [fence.toString(), value],
  parse: (reply: unknown): 'applied' | 'stale' | { foreignFence: string } => {
    if (reply === 1) return 'applied';
    if (reply === 0) return 'stale';
    if (typeof reply === 'string') return { foreignFence: reply };
    throw new Error(`unexpected reply from script fenced-write: ${String(reply)}`);
  },
  lua: `${FENCE_BELOW}${IS_FENCE}
local resource = KEYS[1]
local fence, value = ARGV[1], ARGV[2]

local seen = redis.call('HGET', resource, 'fence')
if seen and not isFence(seen) then
  return seen
end
if seen and fenceBelow(fence, seen) then
  return 0
end
redis.call('HSET', resource, 'fence', fence, 'value', value)
return 1
`,
});
