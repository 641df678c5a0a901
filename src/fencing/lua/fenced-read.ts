import { FENCE_BELOW, IS_FENCE } from '../../lua/fragments.js';
import { defineScript } from '../../lua/script.js';

/**
 * fenced-read — read a fenced value and claim the resource for `fence`: from now on writes
 * with an older fence are refused, so a holder whose lease ran out cannot slip a write in
 * between this read and the write that follows it (a lost update).
 *
 * KEYS[1]  the protected resource (see fenced-write)
 * ARGV[1]  fence, a decimal integer
 *
 * Returns { 1, value or false } when claimed, { 0, false } when a newer fence already claimed,
 * { -1, stored fence } when the stored fence is not a decimal integer (another program wrote
 * the key).
 */
export const fencedReadScript = defineScript({
  name: 'fenced-read',
  keys: ({ key }: { key: string; fence: bigint }) => [key],
  args: ({ fence }) => [fence.toString()],
  parse: (reply: unknown): { claimed: boolean; value: string | null; foreignFence?: string } => {
    const [claimed, value] = Array.isArray(reply) ? reply : [];
    const text = typeof value === 'string' ? value : null;
    if (claimed === -1) return { claimed: false, value: null, foreignFence: text ?? '' };
    return { claimed: claimed === 1, value: text };
  },
  lua: `${FENCE_BELOW}${IS_FENCE}
local resource = KEYS[1]
local fence = ARGV[1]

local seen = redis.call('HGET', resource, 'fence')
if seen and not isFence(seen) then
  return {-1, seen}
end
if seen and fenceBelow(fence, seen) then
  return {0, false}
end
redis.call('HSET', resource, 'fence', fence)
return {1, redis.call('HGET', resource, 'value')}
`,
});
