import type { RedisConnection } from '../../driver/connection.js';
import type { LockContext } from '../../engine/context.js';
import type {
  AcquireRequest,
  HoldKind,
  HoldTarget,
  LinePass,
  TakeReply,
} from '../../engine/contract.js';
import { holdValue } from '../../engine/token.js';
import { lockKey } from '../../keys.js';
import { quorumOf } from '../../quorum/tally.js';
import { acquireFencedScript } from './lua/acquire-fenced.js';
import { acquireInLineScript } from './lua/acquire-in-line.js';
import { extendScript } from './lua/extend.js';
import { leaveQueueScript } from './lua/leave-queue.js';
import { raiseFenceScript } from './lua/raise-fence.js';
import { reclaimScript } from './lua/reclaim.js';
import { releaseScript } from './lua/release.js';

/** The mutual-exclusion lock: one holder per resource, granted by a majority. */
export const mutexKind: HoldKind = {
  noun: 'lock',
  barges: true,
  countsHandOvers: true,
  quorum: quorumOf,
  take: takeLock,
  extend: (node, hold, timeoutMs) => extendScript.run(node, hold, timeoutMs),
  release: (node, hold, timeoutMs) => releaseScript.run(node, hold, timeoutMs),
  leaveLine: (node, hold, timeoutMs) => leaveQueueScript.run(node, hold, timeoutMs),
  raiseFence: (node, hold, timeoutMs) => raiseFenceScript.run(node, hold, timeoutMs),
};

/** A lock on `resource` (see {@link mutexKind}). */
export function lockTarget(context: Pick<LockContext, 'settings'>, resource: string): HoldTarget {
  return { kind: mutexKind, resource, key: lockKey(context.settings.prefix, resource) };
}

function takeLock(
  node: RedisConnection,
  request: AcquireRequest,
  timeoutMs: number,
): Promise<TakeReply> {
  const { line } = request;
  if (line && (line.joined || request.fencing)) return takeInLine(node, request, line, timeoutMs);
  if (request.fencing) return acquireFencedScript.run(node, request, timeoutMs);
  const { key, token, attempt, ttlMs } = request;
  // Plain SET NX PX, as the algorithm specifies: one round trip, no script. Only when the key
  // is taken does a second command join the line (or, for an acquisition that does not wait,
  // check whether the holder is this very acquisition, an earlier attempt that landed unseen,
  // and how long the holder's lease still runs).
  const hold = holdValue(token, attempt);
  return node.send('SET', [key, hold, 'PX', ttlMs, 'NX'], timeoutMs).then((reply) => {
    if (reply === 'OK') return TAKEN;
    // A straggler answering after the acquisition ended must not join the line any more.
    if (line && !line.done) return takeInLine(node, request, line, timeoutMs);
    return reclaimScript.run(node, request, timeoutMs).then((state) => ({ state }));
  });
}

function takeInLine(
  node: RedisConnection,
  request: AcquireRequest,
  line: LinePass,
  timeoutMs: number,
): Promise<TakeReply> {
  const { key, token, attempt, ttlMs, fencing, fenceFromClock } = request;
  const inLine = {
    key,
    token,
    attempt,
    ttlMs,
    fencing,
    fenceFromClock,
    line: line.enter(),
    countsHandOver: line.countsHandOver,
  };
  return acquireInLineScript.run(node, inLine, timeoutMs);
}

const TAKEN: TakeReply = { state: 0 };
