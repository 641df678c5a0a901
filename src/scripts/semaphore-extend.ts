import { EXPIRING_SET, SERVER_TIME } from './lua-fragments.js';
import { defineScript, integerReply } from './script.js';

/**
 * semaphore-extend — set our permit to expire `ttl` from now, by the server's clock (to push
 * it out, or, for `releaseAfter`, to let it run out then). Never revives an expired permit.
 *
 * KEYS[1]  holders (see semaphore-take)
 * ARGV[1]  token
 * ARGV[2]  ttl in milliseconds, counted from now
 *
 * Returns 1 when set, 0 when we hold no permit there.
 */
export const semaphoreExtendScript = defineScript({
  name: 'semaphore-extend',
  keys: ({ key }: { key: string; token: string; ttlMs: number }) => [key],
  args: ({ token, ttlMs }) => [token, ttlMs],
  parse: integerReply('semaphore-extend'),
  lua: `${SERVER_TIME}${EXPIRING_SET}
return extendHold(KEYS[1], ARGV[1], tonumber(ARGV[2]), serverMs())
`,
});
