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
 * The fair line (see acquire-fair): `firstWaiter(queue)` returns the first waiter's token and
 * ticket (its score), or nil when the line is empty; `wakeWaiter(channel, ticket)` tells the
 * waiter holding `ticket` that the lock is free and it is first, on its own channel
 * `<release channel>:<ticket>` (see keys.ts `turnChannel`); `wakeFirstWaiter` does both.
 * A wake-up that fails (a user without access to the channel) only makes waiters poll: it
 * never fails the script around it, whose writes are done by then.
 */
export const FAIR_LINE = `
local function firstWaiter(queue)
  local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
  return first[1], first[2]
end
local function wakeWaiter(channel, ticket)
  redis.pcall('PUBLISH', channel .. ':' .. ticket, '')
end
local function wakeFirstWaiter(queue, channel)
  local _, ticket = firstWaiter(queue)
  if ticket then
    wakeWaiter(channel, ticket)
  end
end
`;
