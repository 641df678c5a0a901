import { fenceKey } from '../../../keys.js';
import { FENCE_BELOW, HOLD_VALUES } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';

/**
 * raise-fence — while we hold the lock, lift the resource's fence counter to at least F, so
 * that any later majority (which must share a node with ours) draws a larger fence.
 *
 * KEYS[1]  lock key
 * KEYS[2]  fence counter
 * ARGV[1]  token
 * ARGV[2]  attempt whose hold it is (see HOLD_VALUES)
 * ARGV[3]  F, a decimal integer
 *
 * Returns 1 when the counter is now >= F and the lock is still ours, 0 when the lock is not.
 */
export const raiseFenceScript = defineScript({
  name: 'raise-fence',
  keys: ({ key }: { key: string; token: string; attempt: number; fence: bigint }) => [
    key,
    fenceKey(key),
  ],
  args: ({ token, attempt, fence }) => [token, attempt, fence.toString()],
  parse: integerReply('raise-fence'),
  lua: `${FENCE_BELOW}${HOLD_VALUES}
local lockKey, fenceCounter = KEYS[1], KEYS[2]
local token, attempt, target = ARGV[1], tonumber(ARGV[2]), ARGV[3]

if attemptOf(redis.call('GET', lockKey), token) ~= attempt then
  return 0
end
if fenceBelow(redis.call('GET', fenceCounter) or '0', target) then
  redis.call('SET', fenceCounter, target)
end
return 1
`,
});
