import { mutexLineKeys } from '../../../keys.js';
import { defineScript, integerReply } from '../../../lua/script.js';
import { LOCK_LINE } from './lock-line.js';

/** What a forced release did on one node (the script's reply). */
export const FORCED = { absent: 0, deleted: 1, handedOver: 2 } as const;

/**
 * force-release — end whatever hold the lock key has, whoever holds it: an operator's way out
 * of a lock whose holder is stuck. When waiters are in line, the lock goes straight to the
 * first of them (see `handOver`), who is woken at once, as on a release that hands over: the
 * line keeps its order, and nobody waits out a retry delay. The old holder's next extension
 * finds another hold (or none) and reports the lock lost.
 *
 * KEYS[1]  lock key
 * KEYS[2]  queue, KEYS[3] waiter deadlines, KEYS[4] waiter channels (see acquire-in-line),
 *          KEYS[5] the line's turn (see LOCK_LINE)
 *
 * Returns 0 when the key was absent (nothing done), 1 when it was deleted and nobody waits,
 * 2 when it was deleted and handed to the first waiter.
 */
export const forceReleaseScript = defineScript({
  name: 'force-release',
  keys: ({ key }: { key: string }) => mutexLineKeys(key),
  args: () => [],
  parse: integerReply('force-release'),
  lua: `${LOCK_LINE}
local lockKey = KEYS[1]

if redis.call('DEL', lockKey) == 0 then
  return ${FORCED.absent}
end
if handOver(lockKey) then
  return ${FORCED.handedOver}
end
return ${FORCED.deleted}
`,
});
