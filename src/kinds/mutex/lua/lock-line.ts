import { WAITING_LINE } from '../../../lua/fragments.js';

/**
 * How long after the lock last went to the front of its line a release may still leave it
 * free for anyone, rather than hand it over, while every waiter is plain (see {@link LOCK_LINE}).
 */
export const BARGE_WINDOW_MS = 10;

/**
 * The lock's waiting line: {@link WAITING_LINE} with bounded barging. Needs two more keys,
 * KEYS[5] `plainWaiters` (the waiters that are not fair, by ticket) and KEYS[6] `lastTurn`
 * (server ms when the lock last went to the front of the line, gone with the line; see
 * `mutexLineKeys`).
 *
 * While every waiter is plain and the lock went to the front less than `BARGE_WINDOW_MS` ago,
 * a release leaves the lock free (and wakes the first waiter, who may take it): a holder that
 * asks again at once takes it back in one round trip, as with no line at all. After the window
 * a release hands the lock to the first waiter, so the front waits at most the window plus one
 * hold; a fair waiter never lets anyone go first, so while one waits every release hands over.
 * A waiter missing from `plainWaiters` counts as fair. Local functions:
 * - `joinLockLine(waiter, ticket, channel, patience, now, plain)`: `joinLine`, and a waiter
 *   joining an empty line starts its turn;
 * - `everyWaiterPlain()`: whether nobody in line is fair;
 * - `startTurn(now, ms)`: the lock goes to the front now (kept `ms` at least);
 * - `mayBarge(now)`: whether a release may leave the lock free;
 * - `handOver(lockKey)`: passes the lock on (see `passOn`), set to expire at the waiter's
 *   deadline (a waiter that died blocks the lock no longer than it would keep its place). The
 *   waiter then confirms with a request of its own, which renews the key to its TTL: its
 *   validity counts from that request, never from the message.
 */
export const LOCK_LINE = `${WAITING_LINE}
local plainWaiters, lastTurn = KEYS[5], KEYS[6]
whenLeaving = function(waiter)
  redis.call('ZREM', plainWaiters, waiter)
  if redis.call('EXISTS', queue) == 0 then
    redis.call('DEL', lastTurn)
  end
end
local function startTurn(now, ms)
  redis.call('SET', lastTurn, now, 'PX', ms)
end
local function joinLockLine(waiter, ticket, channel, patience, now, plain)
  if redis.call('EXISTS', queue) == 0 then
    startTurn(now, patience)
  end
  joinLine(waiter, ticket, channel, patience, now)
  if plain then
    redis.call('ZADD', plainWaiters, ticket, waiter)
    keepAtLeast(plainWaiters, patience)
  end
end
local function everyWaiterPlain()
  return redis.call('ZCARD', plainWaiters) >= redis.call('ZCARD', queue)
end
local function mayBarge(now)
  if redis.call('EXISTS', queue) == 0 or not everyWaiterPlain() then
    return false
  end
  local turn = tonumber(redis.call('GET', lastTurn))
  return turn ~= nil and now - turn < ${BARGE_WINDOW_MS}
end
local function handOver(lockKey)
  return passOn(function(waiter, ms, now)
    redis.call('SET', lockKey, waiter, 'PX', ms)
    startTurn(now, ms)
  end)
end
`;
