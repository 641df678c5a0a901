/**
 * Redis key layout. Every key of one resource starts with the same head, which carries its
 * hash tag, and differs from the others by a suffix with no `{` or `}` in it, so multi-key
 * scripts for that resource stay in one Redis Cluster slot:
 *
 * - `<prefix>{<name>}` for a name that does not begin with `}`. Redis takes the tag from the
 *   first `{` to the first `}` after it: `name` up to its first `}`, never empty, the same for
 *   every key of the name.
 * - `<prefix>}{<hex>}` for a name that begins with `}`, `hex` being its UTF-8 bytes in
 *   lowercase hexadecimal: `<prefix>{}x}` would have an empty tag, which Redis ignores,
 *   hashing each key whole to a slot of its own.
 *
 * The prefix has no `{` or `}` (`lockerSettings` checks it), so the first brace of a key ends
 * its prefix and tells the two forms apart, and the last `}` ends the name (or its hex):
 * different (prefix, name, suffix) triples never share a key.
 */
export function lockKey(prefix: string, resource: string): string {
  if (resource.startsWith('}')) return `${prefix}}{${Buffer.from(resource).toString('hex')}}`;
  return `${prefix}{${resource}}`;
}

/**
 * The holders of the semaphore `name`: a sorted set of tokens by expiry. Its suffix keeps it
 * apart from a lock on the same name, whose keys are the head alone and `<head>:queue...`.
 */
export function permitKey(prefix: string, name: string): string {
  return `${lockKey(prefix, name)}:permits`;
}

/**
 * The keys of the read-write lock `name`, all under its hash tag: the writer's token, the
 * readers (a sorted set of tokens by expiry), and its waiting line, with the waiting writers
 * marked. `base` names the lock as a whole (its leases carry it).
 */
export function readWriteKeys(base: string) {
  return {
    writer: `${base}:writer`,
    readers: `${base}:readers`,
    ...queueKeys(base),
    waitingWriters: `${base}:queue-writers`,
  };
}

/** The base key of the read-write lock `name` (see {@link readWriteKeys}). */
export function readWriteKey(prefix: string, name: string): string {
  return `${lockKey(prefix, name)}:rw`;
}

/**
 * The pub/sub channel on which one locker hears that a release handed it a lock: one per
 * locker (`id` is random), subscribed once, whatever the resources it waits for. Each message
 * names the waiter by its ticket.
 */
export function wakeChannel(prefix: string, id: string): string {
  return `${prefix}wake:${id}`;
}

/**
 * Keys of the waiting line next to the lock at `key` (same hash tag): the waiters' tokens by
 * ticket, by deadline, and each one's wake-up channel.
 */
export function queueKeys(key: string): { queue: string; deadlines: string; channels: string } {
  return {
    queue: `${key}:queue`,
    deadlines: `${key}:queue-deadlines`,
    channels: `${key}:queue-wake`,
  };
}

/** The keys of a script that works on the hold at `key` and its line, in the order it reads them. */
export function lineScriptKeys(key: string): string[] {
  const { queue, deadlines, channels } = queueKeys(key);
  return [key, queue, deadlines, channels];
}

/**
 * The key that only a lock's line (not a semaphore's or a read-write lock's) keeps, next to
 * the line's and gone with it: a hash of when the front's turn began, and whether a fair
 * waiter joined (see `LOCK_LINE`).
 */
export function lineTurnKey(key: string): string {
  return `${key}:queue-turn`;
}

/** The keys of a lock's script that works on its line: {@link lineScriptKeys}, then its turn. */
export function mutexLineKeys(key: string): string[] {
  return [...lineScriptKeys(key), lineTurnKey(key)];
}

/** The fence counter of the lock at `key`: never expires, only grows. */
export function fenceKey(key: string): string {
  return `${key}:fence`;
}

/**
 * The sharded pub/sub channel (Redis Cluster, `SSUBSCRIBE`) on which one locker hears of the
 * hand-offs of the locks in one hash slot: `<prefix>wake:<id>:{<tag>}`, `tag` being a string
 * of that slot (see `slotTag`), so that a release script, which runs on the slot's master,
 * may `SPUBLISH` to it there and nowhere else.
 */
export function shardedWakeChannel(prefix: string, id: string, tag: string): string {
  return `${wakeChannel(prefix, id)}:{${tag}}`;
}

/**
 * The keys of the election `name`, under its hash tag: its leadership (a fenced lock at
 * `lock`, with its line and fence counter next to it), the leader's proclaimed value (a
 * hash), and the channel on which leaders announce changes to observers.
 */
export function electionKeys(prefix: string, name: string) {
  const lock = `${lockKey(prefix, name)}:election`;
  return { lock, leader: `${lock}:leader`, changes: `${lock}:changes` };
}

/** The resource of a `schedule()` job's tick lock is `<TICK_PREFIX><job name>`. */
export const TICK_PREFIX = 'schedule:';

/**
 * The node's record of the longest lease that lockers with this prefix may have been granted
 * on it, and of the server that kept it (see `engine/lease-records.ts`). Its name has no
 * brace, so it is no resource's key.
 */
export function leaseRecordKey(prefix: string): string {
  return `${prefix}longest-lease`;
}
