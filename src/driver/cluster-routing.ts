/** What every Redis Cluster adapter shares: naming, keys, redirections. */
import { setTimeout as delay } from 'node:timers/promises';
import { isErrorReply, NotSentError } from './connection.js';

/** Why a cluster connection refuses WAIT: it cannot tell which master the lock write went to. */
export const WAIT_UNSUPPORTED =
  'replicaAcks is not supported on a Redis Cluster node: WAIT would go to another master';

/** `cluster 127.0.0.1:7000,127.0.0.1:7001`: a cluster is named by its startup nodes, sorted. */
export function clusterNameOf(addresses: readonly string[]): string {
  return `cluster ${[...addresses].sort().join(',')}`;
}

/** The key of a command distlock sends: the first argument, or the first script key. */
export function keyOf(command: string, args: readonly (string | number)[]): string | undefined {
  if (command === 'EVAL' || command === 'EVALSHA') {
    return Number(args[1]) > 0 ? String(args[2]) : undefined;
  }
  if (KEYLESS.has(command) || args[0] === undefined) return undefined;
  return String(args[0]);
}

/** Commands distlock sends without a key. */
const KEYLESS = new Set(['INFO', 'PUBLISH', 'WAIT', 'PING', 'SCAN']);

/**
 * One master's `INFO`, with the master written in after its `# Server` header as
 * `distlock_master:10.0.0.2:6379 slots 5461-10922` (the slots when known), so that what the
 * locker finds there (an eviction policy that may drop lock keys) names the master to fix.
 */
export function masterInfo(info: string, address: string, slots?: string): string {
  const line = `distlock_master:${address}${slots ? ` slots ${slots}` : ''}\r\n`;
  return info.replace(/^# Server\r?\n/m, (header) => header + line);
}

/** Per master (`host:port`), the slots it serves as ranges: `0-5460,10923-16383`. */
export function slotRanges(masterOf: (slot: number) => string | undefined): Map<string, string> {
  const ranges = new Map<string, string[]>();
  for (let first = 0; first < SLOT_COUNT; ) {
    const master = masterOf(first);
    let last = first;
    while (last + 1 < SLOT_COUNT && masterOf(last + 1) === master) last++;
    if (master !== undefined) {
      const range = first === last ? `${first}` : `${first}-${last}`;
      ranges.set(master, [...(ranges.get(master) ?? []), range]);
    }
    first = last + 1;
  }
  return new Map([...ranges].map(([master, list]) => [master, joinedRanges(list)]));
}

/** Ranges as one short text: a master of a cluster resharded often may serve hundreds. */
function joinedRanges(list: readonly string[]): string {
  if (list.length <= MAX_RANGES) return list.join(',');
  return `${list.slice(0, MAX_RANGES).join(',')},+${list.length - MAX_RANGES}-more`;
}

const MAX_RANGES = 4;

/** Hash slots of a Redis Cluster. */
const SLOT_COUNT = 16_384;

/** Replies of a master that does not serve the slot (now, or during a migration). */
const REDIRECTION = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;

/** What a redirection still reported means for the lock (worded as for an ioredis Cluster). */
const REDIRECTION_HINT: Readonly<Record<string, string>> = {
  MOVED: 'the slot moved, and its new master was not reached in time: the slot table is read again',
  ASK: 'the slot is migrating, and its new master did not take the command either',
  TRYAGAIN: 'the slot stayed half-migrated for the whole node timeout',
  CLUSTERDOWN: 'the cluster cannot serve the slot now',
};

/** An error reply of the server: its code in capitals, then a space. */
const REPLY = /^[A-Z][A-Z0-9_-]* /;

/**
 * Whether a failure may mean the slot table is out of date: a redirection, or no answer from
 * a master (not connected, connection lost), which may have been replaced.
 */
export function needsSlotRefresh(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return REDIRECTION.test(error.message) || !REPLY.test(error.message);
}

/**
 * A redirection reply with what it means for the lock, e.g. `MOVED 3999 10.0.0.2:6379 (the
 * slot moved: the next attempt asks its new master)`; `undefined` for any other message.
 */
export function redirectionMessage(reply: string): string | undefined {
  const kind = REDIRECTION.exec(reply)?.[1];
  return kind === undefined ? undefined : `${reply} (${REDIRECTION_HINT[kind]})`;
}

/** Where a redirection reply sends a command, or that it may be sent again. */
export type Redirection =
  | { readonly kind: 'MOVED' | 'ASK'; readonly slot: number; readonly address: string }
  | { readonly kind: 'TRYAGAIN' };

/** `MOVED 3999 10.0.0.2:6379`, `ASK 3999 10.0.0.2:6379` (the address is the last word). */
const REDIRECT = /^(MOVED|ASK) (\d+) (\S+)$/;

/** The redirection an error reply says, if it is one that can be followed. */
export function redirectionOf(error: unknown): Redirection | undefined {
  if (!(error instanceof Error)) return undefined;
  const redirect = REDIRECT.exec(error.message);
  if (redirect) {
    const [, kind, slot, address = ''] = redirect;
    return { kind: kind as 'MOVED' | 'ASK', slot: Number(slot), address };
  }
  return error.message.startsWith('TRYAGAIN') ? { kind: 'TRYAGAIN' } : undefined;
}

/**
 * How an adapter sends one command to a Cluster: where its slot table says, and on to where a
 * redirection points. Each sends once and rejects with the server's error line (or a
 * `NotSentError` when it sent nothing); `timeoutMs` bounds the wait for a connection.
 */
export interface ClusterRoutes {
  /** To the master that serves the command's slot, as far as the client knows. */
  routed(timeoutMs: number): Promise<unknown>;
  /**
   * To the master at `address` (`host:port`), named by MOVED: it serves the slot now. The
   * adapter also reads the slot table again. Absent when the client follows MOVED itself.
   */
  moved?(address: string, timeoutMs: number): Promise<unknown>;
  /**
   * `ASKING` then the command, back to back on one connection to the master at `address`,
   * named by ASK: it is importing the slot, and takes the command only right after `ASKING`.
   * Absent when the client follows ASK itself.
   */
  asked?(address: string, timeoutMs: number): Promise<unknown>;
}

/**
 * The pause before a command that got TRYAGAIN is sent again. Short against the per-node
 * timeouts (20 ms and up): a slot stays half-migrated while its keys are moved, which takes
 * milliseconds for the few keys of a lock. The same for every command, so that commands that
 * got it together are sent again in the order they were first sent in (a waiter leaves the
 * line before its release).
 */
export const TRYAGAIN_PAUSE_MS = 10;

/**
 * Sends one command through `routes` within `timeoutMs`, following a reshard: one MOVED or ASK
 * is followed, and a TRYAGAIN (a command on several keys of a half-migrated slot that are not
 * all on one side) sends it again after {@link TRYAGAIN_PAUSE_MS}, from its master anew. Each
 * of these replies means that the command did not run on the node that gave it, so sending it
 * elsewhere cannot run it twice; any other failure (a lost connection, a timeout) is reported
 * as it is. Nothing is sent once `timeoutMs` has passed: the caller has stopped waiting by
 * then, and a command that arrived later could take what nobody holds. Rejects with the last
 * reply when the command could not be delivered in time.
 */
export async function sendFollowing(routes: ClusterRoutes, timeoutMs: number): Promise<unknown> {
  const deadline = performance.now() + timeoutMs;
  const leftMs = () => Math.max(0, deadline - performance.now());
  for (;;) {
    try {
      return await followOnce(routes, leftMs);
    } catch (error) {
      if (redirectionOf(error)?.kind !== 'TRYAGAIN' || leftMs() <= TRYAGAIN_PAUSE_MS) throw error;
      // Kept ref'ed, like the wait for a reply: a command is still under way.
      await delay(TRYAGAIN_PAUSE_MS);
      // A loaded process may wake up late: past the deadline, nothing more is sent.
      if (leftMs() <= 0) throw error;
    }
  }
}

/** The command to the master of its slot, then to where one MOVED or ASK points. */
async function followOnce(routes: ClusterRoutes, leftMs: () => number): Promise<unknown> {
  try {
    return await routes.routed(leftMs());
  } catch (error) {
    const redirection = redirectionOf(error);
    if (redirection === undefined || redirection.kind === 'TRYAGAIN') throw error;
    const follow = redirection.kind === 'MOVED' ? routes.moved : routes.asked;
    if (follow === undefined || leftMs() <= 0) throw error;
    return follow.call(routes, redirection.address, leftMs()).catch((failure: unknown) => {
      throw unanswered(redirection, failure);
    });
  }
}

/**
 * The failure of the master a MOVED or ASK named, said as such: `slot 3999 moved to
 * 10.0.0.2:6379 (MOVED), which did not answer: connect ECONNREFUSED ...`, so that a dead
 * master reads as one, not as a slot that moved. Still a {@link NotSentError} when nothing
 * was sent; an error reply of that master (another redirection, NOSCRIPT) is left as it is.
 */
function unanswered(redirection: Redirection, failure: unknown): unknown {
  if (redirection.kind === 'TRYAGAIN' || !(failure instanceof Error) || isErrorReply(failure)) {
    return failure;
  }
  const { kind, slot, address } = redirection;
  const where = kind === 'MOVED' ? 'moved' : 'is migrating';
  const message = `slot ${slot} ${where} to ${address} (${kind}), which did not answer: ${failure.message}`;
  if (failure instanceof NotSentError) return new NotSentError(message, { cause: failure });
  // No cause: a client's error may carry the command, whose arguments hold the lock token.
  const code = (failure as NodeJS.ErrnoException).code;
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}
