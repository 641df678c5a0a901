import { fencedReply } from './acquire-fenced.js';
import { defineScript } from './script.js';

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
  numberOfKeys: 4,
  parse: fencedReply('acquire-fair'),
  lua: `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, waiter in ipairs(gone) do
  redis.call('ZREM', KEYS[2], waiter)
  redis.call('ZREM', KEYS[3], waiter)
end
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
local patience = tonumber(ARGV[4])
redis.call('ZADD', KEYS[3], now + patience, ARGV[1])
for i = 2, 3 do
  if redis.call('PTTL', KEYS[i]) < patience then
    redis.call('PEXPIRE', KEYS[i], patience)
  end
end
local fenced = ARGV[6] == '1'
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  -- an earlier attempt already landed: renew the TTL this attempt's validity counts on
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {0, fenced and (redis.call('GET', KEYS[4]) or '0') or ''}
end
if holder then
  return {redis.call('PTTL', KEYS[1]), ''}
end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] ~= ARGV[1] then
  redis.call('PUBLISH', ARGV[5] .. ':' .. first[2], '')
  return {-2, ''}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if fenced then
  redis.call('INCR', KEYS[4])
  return {0, redis.call('GET', KEYS[4])}
end
return {0, ''}
`,
});
