import { fenceKey } from '../../../keys.js';
import { FENCE_BELOW, HOLD_VALUES, IS_FENCE } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';

/**
 * proclaim — store the leader's value, while the election's lock is the caller's, and tell
 * observers. The value is kept with the holder's token, term and a version that grows with
 * each proclaim of one leadership: a proclaim that arrives after a later one (sent on a
 * connection since replaced) changes nothing.
 *
 * KEYS[1]  the election's lock key
 * KEYS[2]  the leader hash: token, term, version, value (never expires; read only while the
 *          lock holds its token, see read-leader)
 * KEYS[3]  the lock's fence counter, from which terms are drawn
 * ARGV[1]  token
 * ARGV[2]  attempt whose hold it is (see HOLD_VALUES; a hand-over's bare token counts too)
 * ARGV[3]  term (the leadership's fence, a decimal string)
 * ARGV[4]  version
 * ARGV[5]  value
 * ARGV[6]  channel to publish the term on
 *
 * Returns 1 when the value stands (stored now, or a later version was already there), 0 when
 * the lock is not the caller's, or the record says this leadership ended here (a release
 * marks it so: see the lock's release script), and -1 when the record holds another
 * leadership whose term is not below this one's: a late copy of an earlier leader's proclaim
 * (terms only grow, so a later leadership's is larger), which must not bring that leader back
 * after the later one ended here. Refusing, it raises the fence counter to the recorded term
 * when the counter is below it, and then answers -2: the counter went back (lost while the
 * record stayed, docs/election.md), and the next draw here passes the record at once, not
 * one term per campaign. A recorded term that INCR could not go past (2^63 - 1 and above,
 * only ever written by hand) is not copied.
 */
export const proclaimScript = defineScript({
  name: 'proclaim',
  keys: ({ key, leaderKey }: ProclaimInput) => [key, leaderKey, fenceKey(key)],
  args: ({ token, attempt, term, version, value, channel }: ProclaimInput) => [
    token,
    attempt,
    term.toString(),
    version,
    value,
    channel,
  ],
  parse: integerReply('proclaim'),
  lua: `${HOLD_VALUES}${FENCE_BELOW}${IS_FENCE}
local lockKey, leaderKey, fenceCounter = KEYS[1], KEYS[2], KEYS[3]
local token, attempt, term = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local version, value, channel = tonumber(ARGV[4]), ARGV[5], ARGV[6]

local held = attemptOf(redis.call('GET', lockKey), token)
if held ~= attempt and held ~= 0 then
  return 0
end
local stored = redis.call('HMGET', leaderKey, 'token', 'version', 'ended', 'term')
if stored[3] == token then
  return 0
end
if stored[1] == token then
  if tonumber(stored[2]) >= version then
    return 1
  end
elseif stored[4] and not fenceBelow(stored[4], term) then
  local recorded = stored[4]
  if isFence(recorded) and fenceBelow(recorded, '9223372036854775807')
      and fenceBelow(redis.call('GET', fenceCounter) or '0', recorded) then
    redis.call('SET', fenceCounter, recorded)
    return -2
  end
  return -1
end
-- The hold's attempt too: a late take of another attempt of the same campaign (after a
-- resignation, say) must not pass for this leadership.
redis.call('HSET', leaderKey, 'token', token, 'attempt', held, 'term', term, 'version', version, 'value', value)
redis.call('PUBLISH', channel, term)
return 1
`,
});

/**
 * What {@link proclaimScript} answers when the record holds a term not below the caller's,
 * above the fence counter, which it raised.
 */
export const COUNTER_RAISED = -2;

/** What {@link proclaimScript} needs. */
export interface ProclaimInput {
  readonly key: string;
  readonly leaderKey: string;
  readonly token: string;
  readonly attempt: number;
  readonly term: bigint;
  readonly version: number;
  readonly value: string;
  readonly channel: string;
}
