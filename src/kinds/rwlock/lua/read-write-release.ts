import { HOLD_VALUES, READ_WRITE_LINE } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';
import { readWriteScriptKeys } from './read-write-take.js';

/**
 * read-write-release — end our read or write hold and, for a real release, wake the front
 * of the line when the lock may now go to it (after a writer, or after the last reader).
 * Undoing a failed attempt wakes nobody. Also how a waiter leaves the line (`leaving`): it
 * then holds nothing, and the front is woken unless a writer holds the lock.
 *
 * KEYS: as read-write-take
 * ARGV[1]  token
 * ARGV[2]  attempt whose hold it ends (see HOLD_VALUES)
 * ARGV[3]  earlier attempts whose take got no answer, comma-separated: a holder's release
 *          (ARGV[5] = '1') ends their reads too; an undo ends its own attempt's only
 * ARGV[4]  'read', 'write' or 'leave'
 * ARGV[5]  '1' to wake the front of the line (a holder's release), '0' not to (an undo)
 *
 * Returns 1 when we held it (or were in line, leaving), 0 otherwise.
 */
export const readWriteReleaseScript = defineScript({
  name: 'read-write-release',
  keys: ({
    key,
  }: {
    key: string;
    token: string;
    attempt: number;
    unanswered: readonly number[];
    mode: 'read' | 'write' | 'leave';
    announce: boolean;
  }) => readWriteScriptKeys(key),
  args: ({ token, attempt, unanswered, mode, announce }) => [
    token,
    attempt,
    unanswered.join(','),
    mode,
    announce ? '1' : '0',
  ],
  parse: integerReply('read-write-release'),
  lua: `${READ_WRITE_LINE}${HOLD_VALUES}
local writerKey, readersKey = KEYS[1], KEYS[5]
local token, attempt, unanswered = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local mode, announce = ARGV[4], ARGV[5] == '1'

local done = 0
if mode == 'write' then
  if attemptOf(redis.call('GET', writerKey), token) == attempt then
    redis.call('DEL', writerKey)
    done = 1
  end
elseif mode == 'read' then
  local ends = announce and ownHolds(token, attempt, unanswered) or {holdOf(token, attempt)}
  done = math.min(1, removeHolds(readersKey, ends))
else
  done = redis.call('ZREM', queue, token)
  leaveRwLine(token)
end
if done == 0 or not announce or redis.call('EXISTS', queue) == 0 then
  return done
end
local now = serverMs()
dropGoneRw(now)
redis.call('ZREMRANGEBYSCORE', readersKey, '-inf', now)
if redis.call('EXISTS', writerKey) == 0 and (mode ~= 'read' or redis.call('EXISTS', readersKey) == 0) then
  wakeFront()
end
return done
`,
});
