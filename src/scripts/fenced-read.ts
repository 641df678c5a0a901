import { defineScript } from './script.js';

/**
 * fenced-read — read a fenced value and claim the resource for `fence`: from now on writes
 * with an older fence are refused, so a holder whose lease ran out cannot slip a write in
 * between this read and the write that follows it (a lost update).
 *
 * KEYS[1]  the protected resource (see fenced-write)
 * ARGV[1]  fence, a decimal integer
 *
 * Returns { 1, value or false } when claimed, { 0, false } when a newer fence already claimed.
 */
export const fencedReadScript = defineScript({
  name: 'fenced-read',
  numberOfKeys: 1,
  parse: (reply: unknown): { claimed: boolean; value: string | null } => {
    const [claimed, value] = Array.isArray(reply) ? reply : [];
    return { claimed: claimed === 1, value: typeof value === 'string' ? value : null };
  },
  lua: `
local seen = redis.call('HGET', KEYS[1], 'fence')
if seen and (#seen > #ARGV[1] or (#seen == #ARGV[1] and seen > ARGV[1])) then
  return {0, false}
end
redis.call('HSET', KEYS[1], 'fence', ARGV[1])
return {1, redis.call('HGET', KEYS[1], 'value')}
`,
});
