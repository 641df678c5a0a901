import { lineScriptKeys } from '../keys.js';
import { placeArgs, type WaitingPlace } from './acquire-in-line.js';
import { EXPIRING_SET, WAITING_LINE } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/** How a permit or a place in line ends (see semaphore-release). */
export type PermitEnd = 'release' | 'undo' | 'leave' | 'leave-granted';

/**
 * semaphore-release — end our permit, or our place in line:
 * - `release`: gives the permit back and hands it to the first waiter in line, as a lock's
 *   release does (see `passOn`): the permit is the waiter's until its deadline in line, and
 *   its next request renews it to its TTL. A newcomer cannot take it meanwhile;
 * - `undo` (a failed attempt): gives it back silently, and a waiter takes its place in line
 *   back (the grant took it out), so that every node keeps the same waiters in one order: a
 *   waiter missing from one node's line would be handed another node's permits;
 * - `leave` (a waiter that gave up): leaves the line and passes on a permit handed to it
 *   meanwhile; otherwise wakes the first waiter, in case a permit is free;
 * - `leave-granted` (it got a permit on a quorum): leaves the line, keeping a permit this
 *   node granted or handed it after the verdict.
 *
 * KEYS[1]  holders, KEYS[2] queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels
 * ARGV[1]  token
 * ARGV[2]  how it ends: 'release', 'undo', 'leave' or 'leave-granted'
 * ARGV[3]  undo of a waiter: its ticket ('' otherwise); ARGV[4] its patience (ms); ARGV[5]
 *          its wake-up channel (see semaphore-take)
 *
 * Returns 1 when we held a permit (release, undo) or were in line (leaving), 0 otherwise.
 */
export const semaphoreReleaseScript = defineScript({
  name: 'semaphore-release',
  keys: ({ key }: { key: string; token: string; end: PermitEnd; line?: WaitingPlace }) =>
    lineScriptKeys(key),
  args: ({ token, end, line }) => [token, end, ...placeArgs(line)],
  parse: integerReply('semaphore-release'),
  lua: `${WAITING_LINE}${EXPIRING_SET}
local holders = KEYS[1]
local token, ending = ARGV[1], ARGV[2]

local function passPermitOn()
  return passOn(function(waiter, ms, now)
    holdUntil(holders, waiter, ms, now)
  end)
end

if ending == 'release' or ending == 'undo' then
  local held = redis.call('ZREM', holders, token)
  if held == 1 and ending == 'release' then
    passPermitOn()
  end
  if ending == 'undo' and ARGV[3] ~= '' then
    joinLine(token, ARGV[3], ARGV[5], tonumber(ARGV[4]), serverMs())
  end
  return held
end
local wasInLine = redis.call('ZREM', queue, token)
leaveLine(token)
if ending == 'leave' then
  if redis.call('ZREM', holders, token) == 1 then
    if not passPermitOn() then
      return 1
    end
  else
    local first = firstWaiter()
    if first then
      wakeWaiter(first)
    end
  end
end
return wasInLine
`,
});
