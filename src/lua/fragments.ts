/**
 * Lua shared by several scripts, written once and placed at the top of each script that
 * uses it (Redis scripts cannot import one another).
 */

/**
 * `fenceBelow(a, b)`: whether the fence `a` is smaller than `b`. Fences cross Lua as decimal
 * digit strings, compared by length and then by text, so that they stay exact at any size
 * (Lua numbers are doubles: exact only up to 2^53).
 */
export const FENCE_BELOW = `
local function fenceBelow(a, b)
  return #a < #b or (#a == #b and a < b)
end
`;

/**
 * `drawFence(counter, fromClock)`: increments the fence counter and returns it as an exact
 * decimal string. With `fromClock` the counter never falls below the node's clock in
 * microseconds (as in hybrid logical clocks): it becomes max(counter, clock) + 1, so that a
 * node that restarted empty, or a replica that missed the last increments, still draws more
 * than the fences drawn before, as long as its clock is not behind by more than the time the
 * restart or failover took (docs/fencing.md, "Restarts and failovers"). Microseconds, not
 * ms: more than one fence per ms is common under hand-off, and a counter that outran a ms
 * clock would drift ahead of it for good. The clock is spelt as digits (seconds, then the
 * µs zero-padded to 6) and stored with SET, never through a Lua number: it stays exact.
 * Every draw ends with INCR, so a user without +incr fails at the first fence, not at the
 * first that finds the counter ahead of the clock.
 */
export const DRAW_FENCE = `${FENCE_BELOW}
local function drawFence(counter, fromClock)
  if fromClock then
    local time = redis.call('TIME')
    local clock = time[1] .. string.rep('0', 6 - #time[2]) .. time[2]
    if fenceBelow(redis.call('GET', counter) or '0', clock) then
      redis.call('SET', counter, clock)
    end
  end
  redis.call('INCR', counter)
  return redis.call('GET', counter)
end
`;

/**
 * `isFence(s)`: whether a stored `fence` field is what a fenced write stores (a decimal
 * integer without leading zeros, which the comparison by length needs); anything else means
 * another program wrote the key.
 */
export const IS_FENCE = `
local function isFence(s)
  return s == '0' or string.find(s, '^[1-9]%d*$') ~= nil
end
`;

/**
 * `holderTtl(lockKey)`: the PTTL of a key held by another, never 0. In its last millisecond
 * a key still exists (GET returns it) while PTTL says 0, which the acquisition scripts would
 * otherwise report as "the lock is now ours".
 */
export const HOLDER_TTL = `
local function holderTtl(lockKey)
  local ttl = redis.call('PTTL', lockKey)
  if ttl == 0 then
    return 1
  end
  return ttl
end
`;

/**
 * Whose a hold is. A node stores a hold as `<token>:<attempt>`: the acquisition's token and
 * the number (1, 2...) of the attempt that took it; a hand-over from the waiting line stores
 * the bare token (attempt 0: handed over, not confirmed yet), or for a waiter that counts the
 * hand-over from its message the hold of the attempt it counts from. A request of one attempt
 * acts on that attempt's hold only, so one that arrives late (sent on a connection since
 * replaced) cannot touch what a later attempt took (docs/safety.md, "Attempts"). Local
 * functions:
 * - `attemptOf(value, token)`: the attempt of acquisition `token` that `value` is a hold of,
 *   0 for a hand-over; nil when it is another's (or nothing);
 * - `holdOf(token, attempt)`: the value of that attempt's hold;
 * - `ownHolds(token, attempt, unanswered)`: the holds a set (permits, readers) may keep for
 *   the acquisition: that attempt's, a hand-over's, and those of the earlier attempts listed
 *   in `unanswered` (comma-separated numbers), whose take got no answer;
 * - `removeHolds(set, members)`: removes those of `members` that `set` has: how many.
 */
export const HOLD_VALUES = `
local function attemptOf(value, token)
  if not value then
    return nil
  end
  if value == token then
    return 0
  end
  local prefix = token .. ':'
  if string.sub(value, 1, #prefix) == prefix then
    return tonumber(string.sub(value, #prefix + 1))
  end
  return nil
end
local function holdOf(token, attempt)
  return token .. ':' .. attempt
end
local function ownHolds(token, attempt, unanswered)
  local holds = {holdOf(token, attempt), token}
  for earlier in string.gmatch(unanswered, '%d+') do
    holds[#holds + 1] = holdOf(token, earlier)
  end
  return holds
end
local function removeHolds(set, members)
  return redis.call('ZREM', set, unpack(members))
end
`;

/**
 * `holderLabel(value)`: what a hold's value says of its holder after the token (see
 * `acquisitionToken`): its start (ms), a semaphore's size ('' when none) and its owner label
 * (percent-encoded); nil for a hold without a label, or a value that is not distlock's.
 */
export const HOLDER_LABEL = `
local function holderLabel(value)
  return string.match(value, '^[%w_-]+%.(%d+)p?(%d*)%.([^:]*)')
end
`;

/** `serverMs()`: the server's clock in ms (holds and waiters never expire by a client's). */
export const SERVER_TIME = `
local function serverMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
`;

/**
 * Holds kept as members of a sorted set scored by when each expires (semaphore permits,
 * read locks), as local functions:
 * - `holdUntil(set, member, ttl, now)`: sets the member to expire `ttl` ms from `now`; the
 *   set itself then lives at least that long;
 * - `extendHold(set, member, ttl, now)`: the same, only for a member that has not expired:
 *   1 when done, 0 otherwise (an expired hold is never revived).
 */
export const EXPIRING_SET = `
local function holdUntil(set, member, ttl, now)
  redis.call('ZADD', set, now + ttl, member)
  if redis.call('PTTL', set) < ttl then
    redis.call('PEXPIRE', set, ttl)
  end
end
local function extendHold(set, member, ttl, now)
  local expiry = redis.call('ZSCORE', set, member)
  if not expiry or tonumber(expiry) <= now then
    return 0
  end
  holdUntil(set, member, ttl, now)
  return 1
end
`;

/**
 * The waiting line of a lock (see acquire-in-line), in three keys: `queue` (waiting tokens
 * scored by ticket, the arrival order), `deadlines` (the same tokens scored by when they
 * count as gone) and `channels` (each waiting token's ticket, as its client wrote it, and
 * how its locker hears of a hand-off: `<ticket> PUBLISH <channel>`, or on a Redis Cluster
 * `<ticket> SPUBLISH <channel>`, a sharded channel of the line's own slot), as
 * local functions:
 * - `serverMs()`: the server's clock in ms (waiter deadlines never use a client's clock);
 * - `joinLine(waiter, ticket, channel, patience, now, count)`: (re)joins at `ticket` (a waiter
 *   keeps its place), with a deadline `patience` ms from `now`, and `count` (when given) as its
 *   `<waiter>:count` field (see LOCK_LINE); the line's keys then live at least
 *   that long (so a line whose waiters all died leaves nothing behind), by
 *   `keepAtLeast(lineKey, ms)`, which never shortens a key's life;
 * - `leaveLine(waiter)`, `dropGone(now, leave)` (each waiter past its deadline, and each at
 *   the front without one, leaves by `leave`, `leaveLine` unless given; returns the first
 *   waiter left, or nil); a kind that keeps more about its waiters sets
 *   `whenLeaving(waiter)`, which `leaveLine` then calls too;
 * - `firstWaiter()`: the first waiter's token and ticket, or nil;
 * - `wakeWaiter(waiter, note)`: tells the waiter on its channel, naming its ticket (and
 *   `note`, when given, after a space), by the command its entry names (only PUBLISH or
 *   SPUBLISH);
 * - `passOn(give, now, first)`: calls `give(waiter, ms, now)` for the first waiter whose
 *   deadline has not passed (dropping those ahead of it whose deadline passed), `ms` being the
 *   time to that deadline, takes it out of the line and wakes it; false when nobody waits.
 *   `now` and `first` are the server's clock and the first waiter when the caller read them
 *   already (else they are read). A kind whose waiters may count a hand-over from its message sets
 *   `handedFor(waiter, ms)`, which returns how long the waiter gets the hold instead and the
 *   note that the wake-up then carries (see LOCK_LINE); `give` then also gets those two, as
 *   `give(waiter, ms, now, heldMs, note)`.
 * A waiter's entry in `channels` may have a second field, `<waiter>:count`, that the kind's
 * scripts write and read (see LOCK_LINE); `leaveLine` removes it too.
 * The script sets the locals `queue`, `deadlines` and `channels` first. A wake-up that fails
 * (a user without access to the channel) only makes waiters poll: it never fails the script
 * around it, whose writes are done by then.
 */
export const WAITING_LINE = `${SERVER_TIME}
local queue, deadlines, channels = KEYS[2], KEYS[3], KEYS[4]
local whenLeaving, handedFor
local function keepAtLeast(lineKey, ms)
  if redis.call('PTTL', lineKey) < ms then
    redis.call('PEXPIRE', lineKey, ms)
  end
end
local function joinLine(waiter, ticket, channel, patience, now, count)
  redis.call('ZADD', queue, 'NX', ticket, waiter)
  redis.call('ZADD', deadlines, now + patience, waiter)
  if count then
    redis.call('HSET', channels, waiter, ticket .. ' ' .. channel, waiter .. ':count', count)
  else
    redis.call('HSET', channels, waiter, ticket .. ' ' .. channel)
  end
  for _, lineKey in ipairs({queue, deadlines, channels}) do
    keepAtLeast(lineKey, patience)
  end
end
local function leaveLine(waiter)
  redis.call('ZREM', queue, waiter)
  redis.call('ZREM', deadlines, waiter)
  redis.call('HDEL', channels, waiter, waiter .. ':count')
  if whenLeaving then
    whenLeaving(waiter)
  end
end
local function firstWaiter()
  local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
  return first[1], first[2]
end
local function dropGone(now, leave)
  leave = leave or leaveLine
  local first = firstWaiter()
  if not first then
    return nil
  end
  local gone = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now)
  for _, waiter in ipairs(gone) do
    leave(waiter)
  end
  if #gone > 0 then
    first = firstWaiter()
  end
  -- A waiter without a deadline is gone too: the line's keys expire one by one, and a clock
  -- set back revives a key Redis had not reaped yet, with waiters whose deadlines are gone.
  while first and not redis.call('ZSCORE', deadlines, first) do
    leave(first)
    first = firstWaiter()
  end
  return first
end
local function wakeWaiter(waiter, note)
  local entry = redis.call('HGET', channels, waiter)
  local ticket, publish, channel = string.match(entry or '', '^(%S+) (S?PUBLISH) (.+)$')
  if not channel then
    -- Written by an earlier version (a rolling deploy): '<ticket> <channel>'.
    publish = 'PUBLISH'
    ticket, channel = string.match(entry or '', '^(%S+) (.+)$')
  end
  if channel then
    redis.pcall(publish, channel, note and (ticket .. ' ' .. note) or ticket)
  end
end
local function passOn(give, now, first)
  if not first then
    if redis.call('EXISTS', queue) == 0 then
      return false
    end
    first = firstWaiter()
  end
  now = now or serverMs()
  while first do
    local deadline = tonumber(redis.call('ZSCORE', deadlines, first))
    if deadline and deadline > now then
      local ms, heldMs, note = deadline - now, deadline - now, nil
      if handedFor then
        heldMs, note = handedFor(first, ms)
      end
      wakeWaiter(first, note)
      leaveLine(first)
      give(first, ms, now, heldMs, note)
      return true
    end
    leaveLine(first)
    first = firstWaiter()
  end
  return false
end
`;

/**
 * The waiting line of a read-write lock: {@link WAITING_LINE} plus `waitingWriters`
 * (KEYS[6], the waiting writers by ticket), as local functions:
 * - `joinRwLine(waiter, writes, ticket, channel, patience, now)`, `leaveRwLine(waiter)`,
 *   `dropGoneRw(now)` (`dropGone`, and, while someone is in line, the first waiting writers
 *   no longer in it leave `waitingWriters`);
 * - `wakeFront()`: wakes the waiters at the front who may go next: the first one if it is
 *   a writer, else every reader before the first waiting writer (at most 100).
 */
export const READ_WRITE_LINE = `${WAITING_LINE}
local waitingWriters = KEYS[6]
local function joinRwLine(waiter, writes, ticket, channel, patience, now)
  joinLine(waiter, ticket, channel, patience, now)
  if writes then
    redis.call('ZADD', waitingWriters, 'NX', ticket, waiter)
    keepAtLeast(waitingWriters, patience)
  end
end
local function leaveRwLine(waiter)
  leaveLine(waiter)
  redis.call('ZREM', waitingWriters, waiter)
end
local function dropGoneRw(now)
  if not dropGone(now, leaveRwLine) then
    return
  end
  -- A waiting writer no longer in line (its entry revived, as above) would let readers pass
  -- the writers that do wait.
  local firstWriter = redis.call('ZRANGE', waitingWriters, 0, 0)[1]
  while firstWriter and not redis.call('ZSCORE', queue, firstWriter) do
    redis.call('ZREM', waitingWriters, firstWriter)
    firstWriter = redis.call('ZRANGE', waitingWriters, 0, 0)[1]
  end
end
local function wakeFront()
  for i, waiter in ipairs(redis.call('ZRANGE', queue, 0, 99)) do
    if redis.call('ZSCORE', waitingWriters, waiter) then
      if i == 1 then
        wakeWaiter(waiter)
      end
      return
    end
    wakeWaiter(waiter)
  end
end
`;
