import { readWriteKeys } from '../../../keys.js';
import { EXPIRING_SET, HOLD_VALUES, SERVER_TIME } from '../../../lua/fragments.js';
import { defineScript, integerReply } from '../../../lua/script.js';

/**
 * read-write-extend — set our read or write hold to expire `ttl` from now (by the server's
 * clock for a reader). Never revives an expired hold.
 *
 * KEYS[1]  writer, KEYS[2] readers (see read-write-take)
 * ARGV[1]  token
 * ARGV[2]  attempt whose hold it is (see HOLD_VALUES)
 * ARGV[3]  ttl in milliseconds, counted from now
 * ARGV[4]  'read' or 'write'
 *
 * Returns 1 when set, 0 when we do not hold it there.
 */
export const readWriteExtendScript = defineScript({
  name: 'read-write-extend',
  keys: ({
    key,
  }: {
    key: string;
    token: string;
    attempt: number;
    ttlMs: number;
    mode: 'read' | 'write';
  }) => {
    const { writer, readers } = readWriteKeys(key);
    return [writer, readers];
  },
  args: ({ token, attempt, ttlMs, mode }) => [token, attempt, ttlMs, mode],
  parse: integerReply('read-write-extend'),
  lua: `${SERVER_TIME}${EXPIRING_SET}${HOLD_VALUES}
local writerKey, readersKey = KEYS[1], KEYS[2]
local token, attempt, ttl, mode = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]

if mode == 'read' then
  return extendHold(readersKey, holdOf(token, attempt), ttl, serverMs())
end
if attemptOf(redis.call('GET', writerKey), token) == attempt then
  return redis.call('PEXPIRE', writerKey, ttl)
end
return 0
`,
});
