import { HOLD_VALUES } from '../../../lua/fragments.js';
import { defineScript } from '../../../lua/script.js';

/** One node's view of the leader: `null` when it has none. */
export interface NodeLeader {
  readonly term: bigint;
  readonly version: number;
  readonly value: string;
}

/**
 * read-leader — the current leader's term, version and value, as one node sees it: the
 * proclaimed value counts only while the election's lock still holds the hold (token and
 * attempt) of the leader that proclaimed it and its release has not marked it ended, so a
 * lease that ran out, a leader that resigned (even if a late copy of its own take put its
 * hold back since), and a late take of another attempt of its campaign read as no leader,
 * and so does a new leader until it proclaims.
 *
 * KEYS[1]  the election's lock key
 * KEYS[2]  the leader hash (see proclaim)
 *
 * Returns { term, version, value }, or an empty table when there is no leader.
 */
export const readLeaderScript = defineScript({
  name: 'read-leader',
  keys: ({ key, leaderKey }: { key: string; leaderKey: string }) => [key, leaderKey],
  args: () => [],
  parse: (reply: unknown): NodeLeader | null => {
    if (Array.isArray(reply) && reply.length === 0) return null;
    const [term, version, value] = Array.isArray(reply) ? reply : [];
    if (typeof term !== 'string' || typeof version !== 'string' || typeof value !== 'string') {
      throw new Error(`unexpected reply from script read-leader: ${String(reply)}`);
    }
    return { term: BigInt(term), version: Number(version), value };
  },
  lua: `${HOLD_VALUES}
local lockKey, leaderKey = KEYS[1], KEYS[2]

local leader = redis.call('HMGET', leaderKey, 'token', 'term', 'version', 'value', 'attempt', 'ended')
if not leader[1] or leader[6] == leader[1] then
  return {}
end
local held = attemptOf(redis.call('GET', lockKey), leader[1])
-- Only the hold that proclaimed (a hash written before it recorded one: any of the token's).
if held == nil or (leader[5] and held ~= tonumber(leader[5])) then
  return {}
end
return {leader[2], leader[3], leader[4]}
`,
});
