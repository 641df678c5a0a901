import { HOLDER_LABEL, SERVER_TIME } from '../../lua/fragments.js';
import { defineScript } from '../../lua/script.js';

/** What one node says about a set of holds (a semaphore's permits, a read-write lock's readers). */
export interface HoldsOnNode {
  /** Holds that have not expired, by the server's clock. */
  readonly holds: number;
  /** How long the longest of them still lives (ms); `null` when there is none. */
  readonly remainingMs: number | null;
  /** Waiters in line whose deadline has not passed. */
  readonly waiters: number;
  /** The owner label of each hold that has one, percent-encoded. */
  readonly owners: readonly string[];
  /** How many may hold at once, as the holders' labels say (the largest); `null`: unsaid. */
  readonly size: number | null;
}

/**
 * inspect-holds — read a set of holds in one step: the holds that have not expired, how long
 * the longest lives, the waiters in line, and the owner label (and a semaphore's size) each
 * hold carries after its token (see `acquisitionToken`). Reads only; tokens never leave the
 * server.
 *
 * KEYS[1]  holds: sorted set of holds scored by the server time (ms) each expires
 * KEYS[2]  waiter deadlines (see acquire-in-line)
 *
 * Returns { holds, ms the longest lives or -1, waiters, { owner labels }, size or -1 }.
 */
export const inspectHoldsScript = defineScript({
  name: 'inspect-holds',
  keys: ({ key, deadlines }: { key: string; deadlines: string }) => [key, deadlines],
  args: () => [],
  parse: (reply: unknown): HoldsOnNode => {
    const [holds, longest, waiters, owners, size] = Array.isArray(reply) ? reply : [];
    if (
      typeof holds !== 'number' ||
      typeof longest !== 'number' ||
      typeof waiters !== 'number' ||
      !Array.isArray(owners) ||
      typeof size !== 'number'
    ) {
      throw new Error(`unexpected reply from script inspect-holds: ${String(reply)}`);
    }
    return {
      holds,
      remainingMs: longest < 0 ? null : longest,
      waiters,
      owners: owners.map(String),
      size: size < 0 ? null : size,
    };
  },
  lua: `${SERVER_TIME}${HOLDER_LABEL}
local holdsKey, deadlines = KEYS[1], KEYS[2]

local now = serverMs()
local owners, longest, size = {}, -1, -1
local holds = 0
-- pcall: a key of another type (not distlock's) holds nothing.
local members = redis.pcall('ZRANGEBYSCORE', holdsKey, '(' .. now, '+inf', 'WITHSCORES')
if not members.err then
  for i = 1, #members, 2 do
    holds = holds + 1
    local _, of, owner = holderLabel(members[i])
    if owner then
      owners[#owners + 1] = owner
      if of ~= '' and tonumber(of) > size then
        size = tonumber(of)
      end
    end
    local left = tonumber(members[i + 1]) - now
    if left > longest then
      longest = left
    end
  end
end
local waiters = redis.call('ZCOUNT', deadlines, '(' .. now, '+inf')
return {holds, longest, waiters, owners, size}
`,
});
