import { lineScriptKeys } from '../../../keys.js';
import { EXPIRING_SET, HOLD_VALUES, WAITING_LINE } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';
import { placeArgs } from '../../../lua/waiting-line.js';

/** What a permit request asks one node for. */
export interface PermitRequest {
  /** The holders key: a sorted set of holds, scored by when each permit expires. */
  readonly key: string;
  readonly token: string;
  readonly attempt: number;
  /** Earlier attempts whose take got no answer (see `HoldId`). */
  readonly unanswered: readonly number[];
  readonly ttlMs: number;
  /** How many permits the semaphore has. */
  readonly permits: number;
  /** A waiter's place in line, when it may wait (see acquire-in-line). */
  readonly line?: {
    readonly ticket: number;
    readonly waiterTimeoutMs: number;
    readonly wakeChannel: string;
    readonly fair: boolean;
  };
}

/**
 * semaphore-take — take one of `permits` permits. Expired permits are dropped first, by the
 * server's clock (`TIME`): never a client's, whose skew would let extra holders in.
 *
 * KEYS[1]  holders: sorted set of holds (see HOLD_VALUES), scored by the server time (ms)
 *          their permit expires
 * KEYS[2]  queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels (see acquire-in-line)
 * ARGV[1]  token
 * ARGV[2]  attempt
 * ARGV[3]  earlier attempts whose take got no answer, comma-separated
 * ARGV[4]  ttl in milliseconds
 * ARGV[5]  permits
 * ARGV[6]  ticket, '' for a request that does not wait (it never joins the line)
 * ARGV[7]  ms after which a waiter that stopped asking is dropped from the line
 * ARGV[8]  the waiter's wake-up channel
 * ARGV[9]  '1' fair: a free permit goes only to the first waiters in line; '0': to anyone
 *
 * When the caller holds a permit already (handed over, or an earlier attempt's that landed
 * unseen), it becomes this attempt's, renewed.
 * Returns 0 when the permit is ours (and the caller left the line); the ms until the soonest
 * permit expires when none is free; -2 (fair only) when one is free but others are first in
 * line (who are then nudged on their channels, in case they slept through their turn).
 */
export const semaphoreTakeScript = defineScript({
  name: 'semaphore-take',
  keys: ({ key }: PermitRequest) => lineScriptKeys(key),
  args: ({ token, attempt, unanswered, ttlMs, permits, line }) => [
    token,
    attempt,
    unanswered.join(','),
    ttlMs,
    permits,
    ...placeArgs(line),
    line?.fair ? '1' : '0',
  ],
  parse: integerReply('semaphore-take'),
  lua: `${WAITING_LINE}${EXPIRING_SET}${HOLD_VALUES}
local holders = KEYS[1]
local token, attempt, unanswered = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local ttl, permits = tonumber(ARGV[4]), tonumber(ARGV[5])
local ticket, patience, channel, fair = ARGV[6], tonumber(ARGV[7]), ARGV[8], ARGV[9] == '1'
local mine = holdOf(token, attempt)

local now = serverMs()
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)

local function take()
  holdUntil(holders, mine, ttl, now)
  leaveLine(token)
  return 0
end

if removeHolds(holders, ownHolds(token, attempt, unanswered)) > 0 then
  return take()
end
dropGone(now)
local free = permits - redis.call('ZCARD', holders)
local waits = ticket ~= ''
if waits then
  joinLine(token, ticket, channel, patience, now)
end
if free > 0 then
  if not fair then
    return take()
  end
  local ahead = redis.call('ZRANK', queue, token) or redis.call('ZCARD', queue)
  if ahead < free then
    return take()
  end
  for _, first in ipairs(redis.call('ZRANGE', queue, 0, free - 1)) do
    wakeWaiter(first)
  end
  return -2
end
local soonest = redis.call('ZRANGE', holders, 0, 0, 'WITHSCORES')[2]
return math.max(1, tonumber(soonest) - now)
`,
});
