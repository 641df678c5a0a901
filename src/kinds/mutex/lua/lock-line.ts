import { WAITING_LINE } from '../../../lua/fragments.js';
import { BARGE_WINDOW_MS } from '../../../lua/waiting-line.js';

/**
 * `young(since, now)`: whether a turn that started at `since` (the turn hash's field, a string
 * or false) is young enough for a release to leave the lock free (see {@link LOCK_LINE}): it
 * started no later than now and less than `BARGE_WINDOW_MS` ago. A turn that starts after
 * now (the server's clock went back) is over, so that a clock stepped back does not hold the
 * window open.
 */
export const YOUNG_TURN = `
local function young(since, now)
  since = tonumber(since)
  return since ~= nil and since <= now and now - since < ${BARGE_WINDOW_MS}
end
`;

/**
 * The lock's waiting line: {@link WAITING_LINE} with bounded barging. Needs one more key,
 * KEYS[5] `turn` (see `mutexLineKeys`): a hash that lives as long as the line, with `since`
 * (server ms when the lock last went to the front of the line) and `fair` (set once a fair
 * waiter joined the line). It is there whenever the line is, so that a script naming the
 * line's keys finds all of them on a node or none (a Cluster slot being moved refuses a
 * script that finds only some).
 *
 * While no fair waiter joined the line and the lock went to the front less than
 * `BARGE_WINDOW_MS` ago, a release leaves the lock free: a holder that asks again at once
 * takes it back in one round trip, as with no line at all. The first such release in a turn
 * wakes the first waiter, who asks at once and, if the lock was taken back meanwhile, once
 * more when the window is over (see `Waiter`); later ones wake nobody, so a holder that takes
 * the lock back again and again costs no message and no failed request per release. After
 * the window a release hands the lock to the first waiter, so the front waits at most the
 * window plus one hold. A fair waiter never lets anyone go first: from the moment
 * one joins until the line is empty again, every release hands over. Local functions:
 * - `joinLockLine(waiter, ticket, channel, patience, now, fair, count)`: `joinLine`; a waiter
 *   joining an empty line starts its turn; `count` is `<attempt> <ttl>` for a waiter that
 *   counts a hand-over from its message (see below), nil otherwise;
 * - `inTurn()`: whether a fair waiter joined the line (then a free lock goes in line order);
 * - `startTurn(now, ms)`: the lock goes to the front now; the hash then lives `ms` at least
 *   (call it only while the line exists);
 * - a release in a young turn ({@link YOUNG_TURN}, defined by the release script) leaves the
 *   lock free and wakes the first waiter, unless it was woken so in this turn already
 *   (`woken` in the turn's hash names it);
 * - `handOver(lockKey, now, first)`: passes the lock on (see `passOn`). A waiter that joined
 *   with a `count` gets the hold of the attempt of its last request here (`<token>:<attempt>`,
 *   so that a late request of an earlier attempt can neither take it over nor delete it) for
 *   max(its TTL, the time to its deadline), and its wake-up names that attempt
 *   (`<ticket> <attempt>`): the request reached the node before the hand-over, so the key
 *   outlives (its send time + TTL), and the waiter may hold from the message with its validity
 *   counted from that send time (`HandOverCount` in the engine). Any other waiter gets its bare
 *   token until its deadline (one that died blocks the lock no longer than it would keep its
 *   place) and a wake-up naming its ticket alone; it confirms with a request of its own, which
 *   renews the key to its TTL. The line's turn lives as long as the line, whatever the hold.
 */
export const LOCK_LINE = `${WAITING_LINE}
local turn = KEYS[5]
whenLeaving = function()
  if redis.call('EXISTS', queue) == 0 then
    redis.call('DEL', turn)
  end
end
local function startTurn(now, ms)
  redis.call('HSET', turn, 'since', now, 'woken', '') -- nobody woken in the new turn yet
  keepAtLeast(turn, ms)
end
handedFor = function(waiter, ms)
  local attempt, ttl =
    string.match(redis.call('HGET', channels, waiter .. ':count') or '', '^(%d+) (%d+)$')
  if ttl then
    return math.max(tonumber(ttl), ms), attempt
  end
  return ms, nil
end
local function joinLockLine(waiter, ticket, channel, patience, now, fair, count)
  if redis.call('EXISTS', queue) == 0 then
    startTurn(now, patience)
  end
  joinLine(waiter, ticket, channel, patience, now, count)
  if fair then
    redis.call('HSET', turn, 'fair', 1)
  end
  keepAtLeast(turn, patience)
end
local function inTurn()
  return redis.call('HGET', turn, 'fair') ~= false
end
local function handOver(lockKey, now, first)
  return passOn(function(waiter, ms, now, heldMs, attempt)
    redis.call('SET', lockKey, attempt and (waiter .. ':' .. attempt) or waiter, 'PX', heldMs)
    if redis.call('EXISTS', queue) == 1 then
      startTurn(now, ms)
    end
  end, now, first)
end
`;
