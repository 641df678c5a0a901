import { fenceKey, queueKeys, releaseChannel } from '../keys.js';
import { fencedReply } from './acquire-fenced.js';
import { FAIR_LINE } from './lua-fragments.js';
import { defineScript } from './script.js';

/** What a fair acquisition asks one node for. */
export interface FairAcquisition {
  readonly key: string;
  readonly token: string;
  readonly ttlMs: number;
  /** Draw a fencing token on acquisition. */
  readonly fencing: boolean;
  readonly fair: {
    /** The caller's place in line (its arrival order), the same on every node. */
    readonly ticket: number;
    /** How long a waiter that stopped asking keeps its place (ms). */
    readonly waiterTimeoutMs: number;
  };
}

/**
 * acquire-fair — take the lock only when it is free and the caller is first in line.
 *
 * KEYS[1]  lock key
 * KEYS[2]  queue: sorted set of waiting tokens, scored by ticket (arrival order)
 * KEYS[3]  waiter deadlines: sorted set of waiting tokens, scored by when they count as gone
 * KEYS[4]  fence counter (see acquire-fenced)
 * ARGV[1]  token
 * ARGV[2]  ttl in milliseconds
 * ARGV[3]  ticket: the caller's arrival order, the same on every node
 * ARGV[4]  ms after which a waiter that stopped asking is dropped from the line
 * ARGV[5]  release channel (see release)
 * ARGV[6]  '1' to draw a fencing token on acquisition, '0' not to
 *
 * Drops waiters whose deadline passed, (re)joins the line and renews the caller's deadline.
 * Both line keys expire (never sooner than any waiter's deadline), so a line whose waiters
 * all died leaves nothing behind.
 * Returns { state, fence }: state 0 when the lock is now ours (and the caller left the line),
 * the holder's remaining TTL in ms (> 0) when held, -1 when held without expiry, -2 when free
 * but another waiter is first (who is then nudged on its channel, in case it slept through its
 * turn); fence as in acquire-fenced ('' unless acquired with ARGV[6] = '1').
 */
export const acquireFairScript = defineScript({
  name: 'acquire-fair',
  keys: ({ key }: FairAcquisition) => {
    const { queue, deadlines } = queueKeys(key);
    return [key, queue, deadlines, fenceKey(key)];
  },
  args: ({ key, token, ttlMs, fair, fencing }) => [
    token,
    ttlMs,
    fair.ticket,
    fair.waiterTimeoutMs,
    releaseChannel(key),
    fencing ? '1' : '0',
  ],
  parse: fencedReply('acquire-fair'),
  lua: `${FAIR_LINE}
local lockKey, queue, deadlines, fenceCounter = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, ttl, ticket = ARGV[1], ARGV[2], ARGV[3]
local patience, channel, fenced = tonumber(ARGV[4]), ARGV[5], ARGV[6] == '1'

local function leaveLine(waiter)
  redis.call('ZREM', queue, waiter)
  redis.call('ZREM', deadlines, waiter)
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', deadlines, '-inf', now)) do
  leaveLine(gone)
end
redis.call('ZADD', queue, 'NX', ticket, token)
redis.call('ZADD', deadlines, now + patience, token)
for _, lineKey in ipairs({queue, deadlines}) do
  if redis.call('PTTL', lineKey) < patience then
    redis.call('PEXPIRE', lineKey, patience)
  end
end

local holder = redis.call('GET', lockKey)
if holder == token then
  -- an earlier attempt already landed: renew the TTL this attempt's validity counts on
  redis.call('PEXPIRE', lockKey, ttl)
  leaveLine(token)
  return {0, fenced and (redis.call('GET', fenceCounter) or '0') or ''}
end
if holder then
  return {redis.call('PTTL', lockKey), ''}
end
local first, firstTicket = firstWaiter(queue)
if first ~= token then
  wakeWaiter(channel, firstTicket)
  return {-2, ''}
end
redis.call('SET', lockKey, token, 'PX', ttl)
leaveLine(token)
if fenced then
  redis.call('INCR', fenceCounter)
  return {0, redis.call('GET', fenceCounter)}
end
return {0, ''}
`,
});
