import { lineScriptKeys } from '../keys.js';
import { placeArgs } from './acquire-in-line.js';
import { EXPIRING_SET, WAITING_LINE } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/** What a permit request asks one node for. */
export interface PermitRequest {
  /** The holders key: a sorted set of tokens, scored by when each permit expires. */
  readonly key: string;
  readonly token: string;
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
 * KEYS[1]  holders: sorted set of tokens, scored by the server time (ms) their permit expires
 * KEYS[2]  queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels (see acquire-in-line)
 * ARGV[1]  token
 * ARGV[2]  ttl in milliseconds
 * ARGV[3]  permits
 * ARGV[4]  ticket, '' for a request that does not wait (it never joins the line)
 * ARGV[5]  ms after which a waiter that stopped asking is dropped from the line
 * ARGV[6]  the waiter's wake-up channel
 * ARGV[7]  '1' fair: a free permit goes only to the first waiters in line; '0': to anyone
 *
 * When the caller holds a permit already (an earlier attempt landed unseen), renews it.
 * Returns 0 when the permit is ours (and the caller left the line); the ms until the soonest
 * permit expires when none is free; -2 (fair only) when one is free but others are first in
 * line (who are then nudged on their channels, in case they slept through their turn).
 */
export const semaphoreTakeScript = defineScript({
  name: 'semaphore-take',
  keys: ({ key }: PermitRequest) => lineScriptKeys(key),
  args: ({ token, ttlMs, permits, line }) => [
    token,
    ttlMs,
    permits,
    ...placeArgs(line),
    line?.fair ? '1' : '0',
  ],
  parse: integerReply('semaphore-take'),
  lua: `${WAITING_LINE}${EXPIRING_SET}
local holders = KEYS[1]
local token, ttl, permits = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local ticket, patience, channel, fair = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7] == '1'

local now = serverMs()
redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)

local function take()
  holdUntil(holders, token, ttl, now)
  leaveLine(token)
  return 0
end

if redis.call('ZSCORE', holders, token) then
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
