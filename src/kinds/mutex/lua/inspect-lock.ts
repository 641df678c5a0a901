import { fenceKey, queueKeys } from '../../../keys.js';
import { HOLDER_LABEL, SERVER_TIME } from '../../../lua/fragments.js';
import { defineScript } from '../../../lua/script.js';

/** What one node says about a lock: never whose it is. */
export interface LockOnNode {
  /** The key's PTTL: -2 absent, -1 no expiry, else ms left. */
  readonly pttl: number;
  /** The fence counter as an exact decimal, or `null` when no fence was ever drawn here. */
  readonly fence: string | null;
  /** Waiters in line whose deadline has not passed. */
  readonly waiters: number;
  /** The holder's owner label, percent-encoded, or `null` when it gave none. */
  readonly owner: string | null;
  /** When the holder's acquisition began (ms since the epoch, its clock), with `owner`. */
  readonly since: number | null;
}

/**
 * inspect-lock — read a lock's state in one step: how long its key lives, its fence counter,
 * how many waiters are in line, and who holds it (the owner label and start time that follow
 * the token in its hold, see `acquisitionToken`). Reads only; the token never leaves the
 * server.
 *
 * KEYS[1]  lock key
 * KEYS[2]  fence counter
 * KEYS[3]  waiter deadlines (see acquire-in-line)
 *
 * Returns { PTTL of the lock key, fence counter or '', waiters whose deadline is still ahead
 * by the server's clock (those past it count as gone, as the line's scripts drop them),
 * the holder's start time or '', its owner label (percent-encoded) or '' }.
 */
export const inspectLockScript = defineScript({
  name: 'inspect-lock',
  keys: ({ key }: { key: string }) => [key, fenceKey(key), queueKeys(key).deadlines],
  args: () => [],
  parse: (reply: unknown): LockOnNode => {
    const [pttl, fence, waiters, since, owner] = Array.isArray(reply) ? reply : [];
    if (
      typeof pttl !== 'number' ||
      typeof fence !== 'string' ||
      typeof waiters !== 'number' ||
      typeof since !== 'string' ||
      typeof owner !== 'string'
    ) {
      throw new Error(`unexpected reply from script inspect-lock: ${String(reply)}`);
    }
    return {
      pttl,
      fence: fence === '' ? null : fence,
      waiters,
      owner: since === '' ? null : owner,
      since: since === '' ? null : Number(since),
    };
  },
  lua: `${SERVER_TIME}${HOLDER_LABEL}
local lockKey, fenceCounter, deadlines = KEYS[1], KEYS[2], KEYS[3]

local pttl = redis.call('PTTL', lockKey)
local fence = redis.call('GET', fenceCounter) or ''
local waiters = redis.call('ZCOUNT', deadlines, '(' .. serverMs(), '+inf')
local since, owner = '', ''
-- pcall: a key of another type (not distlock's) has no holder to name.
local value = redis.pcall('GET', lockKey)
if type(value) == 'string' then
  local start, _, label = holderLabel(value)
  since, owner = start or '', label or ''
end
return {pttl, fence, waiters, since, owner}
`,
});
