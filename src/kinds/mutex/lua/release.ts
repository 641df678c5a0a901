import { mutexLineKeys } from '../../../keys.js';
import { HOLD_VALUES, SERVER_TIME } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';
import { LOCK_LINE, YOUNG_TURN } from './lock-line.js';

/**
 * release — compare-and-delete, or hand over: when the lock key still holds our hold and
 * someone waits in line (see acquire-in-line), the lock goes straight to the first waiter,
 * who alone is woken (no thundering herd), unless no fair waiter joined the line and the
 * front's turn is young: then the key is deleted, the first waiter woken (by the turn's first
 * such release only), and whoever asks first takes it, the releaser too (bounded barging, see
 * LOCK_LINE). Without waiters the key
 * is deleted. Undoing a failed attempt is silent (a plain delete): the node
 * goes back to how it was, and handing over there would split the line's order across nodes.
 *
 * KEYS[1]  lock key
 * KEYS[2]  queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels (see acquire-in-line);
 *          usually absent; KEYS[5] the line's turn (see LOCK_LINE)
 * KEYS[6]  optional: a record of the holder beside the lock (an election's leader hash): a
 *          holder's release marks it ended (field `ended` = the token), so that a copy of the
 *          holder's own take that lands after this release (re-sent by a client library,
 *          then delayed) cannot make the record count again, nor a late copy of its proclaim
 *          (see election/lua/read-leader and proclaim). Where it released its hold here, it
 *          marks unless the record's own leader ended it already (that mark stays); where it
 *          found none left, only a record of its own or one with no mark
 * ARGV[1]  token
 * ARGV[2]  attempt whose hold it ends (see HOLD_VALUES)
 * ARGV[3]  '1' a holder's release: hand over to a waiter; '0' an undo: delete silently
 *
 * An undo ends its own attempt's hold only. A holder's release also ends a hand-over that the
 * line made to it after it got the lock elsewhere (the bare token).
 *
 * Returns 1 when released (deleted or handed over), 0 when the key is gone or holds another
 * hold.
 */
export const releaseScript = defineScript({
  name: 'release',
  keys: ({
    key,
    record,
  }: {
    key: string;
    token: string;
    attempt: number;
    announce: boolean;
    record?: string;
  }) => (record === undefined ? mutexLineKeys(key) : [...mutexLineKeys(key), record]),
  args: ({ token, attempt, announce }) => [token, attempt, announce ? '1' : '0'],
  parse: integerReply('release'),
  // The usual cases come first, before the line's functions (and the general parsing of
  // holds) are defined. With nobody in line, the key holds this very attempt's hold (or, for
  // a holder's release, a hand-over to it): a plain compare-and-delete, before any function
  // is defined at all unless a holder's release is to mark a record. Under contention, the
  // release of a young turn whose first waiter, still in time, was woken already: the lock is
  // left free and nobody is woken, exactly as the line's own path below would decide (which
  // would also drop the waiters behind the first that are past their deadline: the line's
  // other scripts, and the next release past the turn's window, do).
  lua: `local lockKey, token, attempt, announce = KEYS[1], ARGV[1], ARGV[2], ARGV[3] == '1'
local value = redis.call('GET', lockKey)
local ours = value == token .. ':' .. attempt or (announce and value == token)
local waiting
if ours then
  waiting = announce and redis.call('EXISTS', KEYS[2]) == 1
  if not waiting and not (announce and KEYS[6]) then
    redis.call('DEL', lockKey)
    return 1
  end
end
${SERVER_TIME}${YOUNG_TURN}
local function release()
if ours then
  if not waiting then
    redis.call('DEL', lockKey)
    return 1
  end
  local turn = KEYS[5]
  if redis.call('HGET', turn, 'fair') == false then
    local woken = redis.call('HGET', turn, 'woken')
    if woken and redis.call('ZRANGE', KEYS[2], 0, 0)[1] == woken then
      local now = serverMs()
      local deadline = tonumber(redis.call('ZSCORE', KEYS[3], woken))
      if deadline and deadline > now and young(redis.call('HGET', turn, 'since'), now) then
        redis.call('DEL', lockKey)
        return 1
      end
    end
  end
end
${HOLD_VALUES}
local held = attemptOf(value, token)
if held ~= tonumber(attempt) and not (announce and held == 0) then
  return 0
end
if waiting == nil then
  waiting = announce and redis.call('EXISTS', KEYS[2]) == 1
end
if not waiting then
  redis.call('DEL', lockKey)
  return 1
end
do
${LOCK_LINE}
  -- Separate HGETs, not one HMGET: the ACL rules that users were given name +hget only.
  local now, first = serverMs(), nil
  if not inTurn() then
    first = dropGone(now)
    if not first then
      redis.call('DEL', lockKey)
      return 1
    end
    if young(redis.call('HGET', turn, 'since'), now) then
      -- Left free for whoever asks first; the first waiter is woken once in its turn.
      redis.call('DEL', lockKey)
      if redis.call('HGET', turn, 'woken') ~= first then
        redis.call('HSET', turn, 'woken', first)
        wakeWaiter(first)
      end
      return 1
    end
  end
  if handOver(lockKey, now, first) then
    return 1
  end
end
redis.call('DEL', lockKey)
return 1
end
local released = release()
if announce and KEYS[6] then
  -- After the release's own write (a node out of memory refuses a first write other than a
  -- delete), and never failing it. The record keeps one mark: it is ours to write where the
  -- record is ours or has none; else only where this release ended a hold, and never over a
  -- mark that its own leader's release made (the release of a later holder that gave the
  -- lock back before it proclaimed must not make that leader count again). So a release
  -- that found no hold left (it ran out here, or another holds the lock now) still marks a
  -- record of its own, or one with no mark, against a late copy of its take (and of its
  -- proclaim, which a mark refuses), and replaces no other's mark.
  local record = redis.pcall('HMGET', KEYS[6], 'ended', 'token')
  if record.err or not record[1] or record[2] == token
      or (released == 1 and record[1] ~= record[2]) then
    redis.pcall('HSET', KEYS[6], 'ended', token)
  end
end
return released
`,
});
