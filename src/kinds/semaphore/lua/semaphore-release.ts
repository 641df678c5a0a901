import { lineScriptKeys } from '../../../keys.js';
import { EXPIRING_SET, HOLD_VALUES, WAITING_LINE } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';
import { placeArgs, type WaitingPlace } from '../../../lua/waiting-line.js';

/** How a permit or a place in line ends (see semaphore-release). */
export type PermitEnd = 'release' | 'undo' | 'leave' | 'leave-granted';

/** Whose permit or place ends, and how (see semaphore-release). */
export interface PermitEnding {
  readonly key: string;
  readonly token: string;
  readonly attempt: number;
  readonly unanswered: readonly number[];
  readonly end: PermitEnd;
  /** Undo of a waiter's attempt: its place, given back. */
  readonly line?: WaitingPlace;
}

/**
 * semaphore-release — end our permit, or our place in line:
 * - `release`: gives the holder's permits back (the attempt's, a hand-over's, unanswered
 *   earlier attempts'; see HOLD_VALUES) and hands each to the first waiter in line, as a
 *   lock's release does (see `passOn`): the permit is the waiter's until its deadline in
 *   line, and its next request renews it to its TTL. A newcomer cannot take it meanwhile;
 * - `undo` (a failed attempt): gives that attempt's permit back silently, and a waiter takes
 *   its place in line back (the grant took it out), so that every node keeps the same
 *   waiters in one order: a waiter missing from one node's line would be handed another
 *   node's permits. An undo that finds no permit of its attempt changes nothing: it came
 *   late, and the waiter may be gone;
 * - `leave` (a waiter that gave up): leaves the line and passes on any permit of its own
 *   (handed to it meanwhile, or left by an unanswered attempt); otherwise wakes the first
 *   waiter, in case a permit is free;
 * - `leave-granted` (it got a permit on a quorum): leaves the line, keeping a permit this
 *   node granted or handed it after the verdict.
 *
 * KEYS[1]  holders, KEYS[2] queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels
 * ARGV[1]  token
 * ARGV[2]  attempt (the last one, when leaving)
 * ARGV[3]  earlier attempts whose take got no answer, comma-separated
 * ARGV[4]  how it ends: 'release', 'undo', 'leave' or 'leave-granted'
 * ARGV[5]  undo of a waiter: its ticket ('' otherwise); ARGV[6] its patience (ms); ARGV[7]
 *          its wake-up channel (see semaphore-take)
 *
 * Returns 1 when we held a permit (release, undo) or were in line (leaving), 0 otherwise.
 */
export const semaphoreReleaseScript = defineScript({
  name: 'semaphore-release',
  keys: ({ key }: PermitEnding) => lineScriptKeys(key),
  args: ({ token, attempt, unanswered, end, line }) => [
    token,
    attempt,
    unanswered.join(','),
    end,
    ...placeArgs(line),
  ],
  parse: integerReply('semaphore-release'),
  lua: `${WAITING_LINE}${EXPIRING_SET}${HOLD_VALUES}
local holders = KEYS[1]
local token, attempt, unanswered, ending = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]

local function passPermitOn()
  return passOn(function(waiter, ms, now)
    holdUntil(holders, waiter, ms, now)
  end)
end

local function passPermitsOn(count)
  for _ = 1, count do
    if not passPermitOn() then
      return false
    end
  end
  return true
end

if ending == 'undo' then
  local held = redis.call('ZREM', holders, holdOf(token, attempt))
  if held == 1 and ARGV[5] ~= '' then
    joinLine(token, ARGV[5], ARGV[7], tonumber(ARGV[6]), serverMs())
  end
  return held
end
if ending == 'release' then
  local held = removeHolds(holders, ownHolds(token, attempt, unanswered))
  passPermitsOn(held)
  return math.min(held, 1)
end
local wasInLine = redis.call('ZREM', queue, token)
leaveLine(token)
if ending == 'leave' then
  local held = removeHolds(holders, ownHolds(token, attempt, unanswered))
  if held > 0 then
    if not passPermitsOn(held) then
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
