import { readWriteKeys } from '../keys.js';
import { EXPIRING_SET, SERVER_TIME } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/**
 * read-write-extend — set our read or write hold to expire `ttl` from now (by the server's
 * clock for a reader). Never revives an expired hold.
 *
 * KEYS[1]  writer, KEYS[2] readers (see read-write-take)
 * ARGV[1]  token
 * ARGV[2]  ttl in milliseconds, counted from now
 * ARGV[3]  'read' or 'write'
 *
 * Returns 1 when set, 0 when we do not hold it there.
 */
export const readWriteExtendScript = defineScript({
  name: 'read-write-extend',
  keys: ({ key }: { key: string; token: string; ttlMs: number; mode: 'read' | 'write' }) => {
    const { writer, readers } = readWriteKeys(key);
    return [writer, readers];
  },
  args: ({ token, ttlMs, mode }) => [token, ttlMs, mode],
  parse: integerReply('read-write-extend'),
  lua: `${SERVER_TIME}${EXPIRING_SET}
local writerKey, readersKey = KEYS[1], KEYS[2]
local token, ttl, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]

if mode == 'read' then
  return extendHold(readersKey, token, ttl, serverMs())
end
if redis.call('GET', writerKey) == token then
  return redis.call('PEXPIRE', writerKey, ttl)
end
return 0
`,
});
