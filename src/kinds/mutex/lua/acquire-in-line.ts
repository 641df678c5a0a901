import { fenceKey, mutexLineKeys } from '../../../keys.js';
import { DRAW_FENCE, HOLD_VALUES, HOLDER_TTL } from '../../../lua/fragments.js';
import { defineScript } from '../../../lua/script.js';
import { type LineTicket, placeArgs } from '../../../lua/waiting-line.js';
import { fencedReply } from './acquire-fenced.js';
import { LOCK_LINE } from './lock-line.js';

/** What an acquisition that waits in line asks one node for. */
export interface LineAcquisition {
  readonly key: string;
  readonly token: string;
  readonly attempt: number;
  readonly ttlMs: number;
  /** Draw a fencing token on acquisition. */
  readonly fencing: boolean;
  /** Keep the fence at or above the node's clock (`AcquireRequest.fenceFromClock`). @default false */
  readonly fenceFromClock?: boolean;
  readonly line: LineTicket;
  /**
   * May count a hand-over from its message (see `handOver` in LOCK_LINE): the node then
   * remembers this attempt and TTL with the caller's place. @default false
   */
  readonly countsHandOver?: boolean;
}

/**
 * acquire-in-line — take the lock, or wait for it in line. A release hands the lock to the
 * first waiter in line (see `handOver`), or leaves it free for a while if no fair waiter
 * joined the line (see LOCK_LINE); a handed-over waiter's next call here confirms it.
 *
 * KEYS[1]  lock key
 * KEYS[2]  queue: sorted set of waiting tokens, scored by ticket (arrival order)
 * KEYS[3]  waiter deadlines: sorted set of waiting tokens, scored by when they count as gone
 * KEYS[4]  waiter channels: hash of waiting token to `<ticket> <channel that wakes it>`
 * KEYS[5]  the line's turn (see LOCK_LINE)
 * KEYS[6]  fence counter (see acquire-fenced)
 * ARGV[1]  token (the line knows the caller by it)
 * ARGV[2]  attempt (see HOLD_VALUES)
 * ARGV[3]  ttl in milliseconds
 * ARGV[4]  ticket: the caller's arrival order, the same on every node
 * ARGV[5]  ms after which a waiter that stopped asking is dropped from the line
 * ARGV[6]  the caller's wake-up channel (its locker's)
 * ARGV[7]  '1' to draw a fencing token on acquisition, '0' not to
 * ARGV[8]  '1' fair: a free lock goes only to the first in line, and no release may leave it
 *          free while the caller waits; '0' plain: a free lock goes to anyone, unless a fair
 *          waiter joined the line (see LOCK_LINE)
 * ARGV[9]  '1' to keep the fence counter at or above the node's clock in µs (see DRAW_FENCE)
 * ARGV[10] '1' when the caller counts a hand-over from its message: a release then hands it
 *          the lock for its TTL and names this attempt in the wake-up (see `handOver`)
 *
 * When the key holds a hand-over to the caller or an earlier attempt's hold (that landed
 * unseen), it becomes this attempt's, with the TTL this attempt's validity counts on; when a
 * later attempt of the caller's holds it, this request came late and changes nothing (-3).
 * Otherwise drops waiters that are gone (see WAITING_LINE's `dropGone`) and, when the lock is
 * held by another, (re)joins the line at the caller's ticket and renews its deadline. A free
 * lock goes to the caller unless it must go in line order (the caller is fair, or a fair
 * waiter joined the line) and another waiter is first. The line's keys expire (never sooner
 * than any waiter's deadline), so a line whose waiters all died leaves nothing behind.
 *
 * Returns { state, fence }: state 0 when the lock is ours (and the caller left the line), the
 * holder's remaining TTL in ms (> 0) when held, -1 when held without expiry, -2 when free but
 * another waiter's turn (who is then nudged on its channel, in case it slept through its
 * turn); fence as in acquire-fenced ('' unless acquired with ARGV[7] = '1'; a confirmed
 * hand-over draws a new one).
 */
export const acquireInLineScript = defineScript({
  name: 'acquire-in-line',
  keys: ({ key }: LineAcquisition) => [...mutexLineKeys(key), fenceKey(key)],
  args: ({ token, attempt, ttlMs, line, fencing, fenceFromClock, countsHandOver }) => [
    token,
    attempt,
    ttlMs,
    ...placeArgs(line),
    fencing ? '1' : '0',
    line.fair ? '1' : '0',
    fenceFromClock ? '1' : '0',
    countsHandOver ? '1' : '0',
  ],
  parse: fencedReply('acquire-in-line'),
  lua: `${HOLDER_TTL}${LOCK_LINE}${HOLD_VALUES}${DRAW_FENCE}
local lockKey, fenceCounter = KEYS[1], KEYS[6]
local token, attempt, ttl, ticket = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local patience, channel = tonumber(ARGV[5]), ARGV[6]
local fenced, fair, fromClock = ARGV[7] == '1', ARGV[8] == '1', ARGV[9] == '1'
local count = ARGV[10] == '1' and (attempt .. ' ' .. ttl) or nil
local mine = holdOf(token, attempt)

local function granted()
  leaveLine(token)
  if fenced then
    return {0, drawFence(fenceCounter, fromClock)}
  end
  return {0, ''}
end

local holder = redis.call('GET', lockKey)
local held = attemptOf(holder, token)
if held and held <= attempt then
  redis.call('SET', lockKey, mine, 'PX', ttl)
  return granted()
end
if held then
  return {-3, ''}
end
local now = serverMs()
dropGone(now)
if holder then
  joinLockLine(token, ticket, channel, patience, now, fair, count)
  return {holderTtl(lockKey), ''}
end
local ordered = fair or inTurn()
if ordered then
  joinLockLine(token, ticket, channel, patience, now, fair, count)
end
local first = firstWaiter()
if first == token then
  startTurn(now, patience)
elseif first and ordered then
  wakeWaiter(first)
  return {-2, ''}
end
redis.call('SET', lockKey, mine, 'PX', ttl)
return granted()
`,
});
