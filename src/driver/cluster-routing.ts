/** What every Redis Cluster adapter shares: naming, keys, redirections. */

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
const KEYLESS = new Set(['INFO', 'PUBLISH', 'WAIT', 'PING']);

/** Replies of a master that does not serve the slot (now, or during a migration). */
const REDIRECTION = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;

/** What each redirection means for the lock (worded as for an ioredis Cluster). */
const REDIRECTION_HINT: Readonly<Record<string, string>> = {
  MOVED: 'the slot moved: the next attempt asks its new master',
  ASK: 'the slot is migrating: the next attempt asks again',
  TRYAGAIN: 'the slot is migrating: the next attempt asks again',
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
