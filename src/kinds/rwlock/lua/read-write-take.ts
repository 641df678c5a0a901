import { readWriteKeys } from '../../../keys.js';
import { EXPIRING_SET, HOLD_VALUES, READ_WRITE_LINE } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';
import { placeArgs } from '../../../lua/waiting-line.js';

/** The keys of the read-write lock at `key`, in the order its scripts name them. */
export function readWriteScriptKeys(key: string): string[] {
  const { writer, queue, deadlines, channels, readers, waitingWriters } = readWriteKeys(key);
  return [writer, queue, deadlines, channels, readers, waitingWriters];
}

/** What a read or write request asks one node for. */
export interface ReadWriteRequest {
  /** The lock's base key (see `readWriteKeys`). */
  readonly key: string;
  readonly token: string;
  readonly attempt: number;
  /** Earlier attempts whose take got no answer (see `HoldId`). */
  readonly unanswered: readonly number[];
  readonly ttlMs: number;
  readonly mode: 'read' | 'write';
  /** A waiter's place in line, when it may wait (see acquire-in-line). */
  readonly line?: {
    readonly ticket: number;
    readonly waiterTimeoutMs: number;
    readonly wakeChannel: string;
  };
}

/**
 * read-write-take — take the lock for reading (shared) or writing (exclusive), served in
 * arrival order: a reader waits only for a writer that holds the lock or waits ahead of it,
 * so a stream of readers cannot starve a writer; a writer waits for the holders and for
 * everyone ahead of it in line. Reader expiry goes by the server's clock (`TIME`).
 *
 * KEYS[1]  writer: the writing holder's hold (see HOLD_VALUES), expiring at its TTL
 * KEYS[2]  queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels (see acquire-in-line)
 * KEYS[5]  readers: sorted set of reading holds, by the server time each expires
 * KEYS[6]  waiting writers: the waiters in line that want to write, by ticket
 * ARGV[1]  token
 * ARGV[2]  attempt
 * ARGV[3]  earlier attempts whose take got no answer, comma-separated
 * ARGV[4]  ttl in milliseconds
 * ARGV[5]  'read' or 'write'
 * ARGV[6]  ticket, '' for a request that does not wait (it never joins the line)
 * ARGV[7]  ms after which a waiter that stopped asking is dropped from the line
 * ARGV[8]  the waiter's wake-up channel
 *
 * When the caller holds the lock already (an earlier attempt's hold landed unseen), it
 * becomes this attempt's, renewed; when a later attempt of the caller's writes, this request
 * came late and changes nothing (-3).
 * Returns 0 when the lock is ours (and the caller left the line); the ms until the holder
 * that blocks us expires (> 0; -1 a writer without expiry); -2 when only the line's order
 * blocks us (the front of the line is then nudged, in case it slept through its turn).
 */
export const readWriteTakeScript = defineScript({
  name: 'read-write-take',
  keys: ({ key }: ReadWriteRequest) => readWriteScriptKeys(key),
  args: ({ token, attempt, unanswered, ttlMs, mode, line }) => [
    token,
    attempt,
    unanswered.join(','),
    ttlMs,
    mode,
    ...placeArgs(line),
  ],
  parse: integerReply('read-write-take'),
  lua: `${READ_WRITE_LINE}${EXPIRING_SET}${HOLD_VALUES}
local writerKey, readersKey = KEYS[1], KEYS[5]
local token, attempt, unanswered = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local ttl, writes = tonumber(ARGV[4]), ARGV[5] == 'write'
local ticket, patience, channel = ARGV[6], tonumber(ARGV[7]), ARGV[8]
local mine = holdOf(token, attempt)

local now = serverMs()
redis.call('ZREMRANGEBYSCORE', readersKey, '-inf', now)
local writer = redis.call('GET', writerKey)

local function read()
  holdUntil(readersKey, mine, ttl, now)
  leaveRwLine(token)
  return 0
end

local function write()
  redis.call('SET', writerKey, mine, 'PX', ttl)
  leaveRwLine(token)
  return 0
end

if writes then
  local held = attemptOf(writer, token)
  if held and held <= attempt then
    return write()
  end
  if held then
    return -3
  end
elseif removeHolds(readersKey, ownHolds(token, attempt, unanswered)) > 0 then
  return read()
end
dropGoneRw(now)
local waits = ticket ~= ''
if waits then
  joinRwLine(token, writes, ticket, channel, patience, now)
end
if writer then
  local ttlLeft = redis.call('PTTL', writerKey)
  if ttlLeft == 0 then
    return 1
  end
  return ttlLeft
end
if not writes then
  -- The line's own order (ticket, then token on a tie), never the tickets alone: a reader
  -- and a writer that drew the same ticket would each wait for the other.
  local firstWriter = redis.call('ZRANGE', waitingWriters, 0, 0)[1]
  local writerRank = firstWriter and redis.call('ZRANK', queue, firstWriter)
  if not writerRank or (waits and writerRank > redis.call('ZRANK', queue, token)) then
    return read()
  end
  wakeFront()
  return -2
end
local soonest = redis.call('ZRANGE', readersKey, 0, 0, 'WITHSCORES')[2]
if soonest then
  return math.max(1, tonumber(soonest) - now)
end
local ahead = waits and redis.call('ZRANK', queue, token) or redis.call('ZCARD', queue)
if ahead == 0 then
  return write()
end
wakeFront()
return -2
`,
});
