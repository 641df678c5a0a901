import { resolveNodes } from '../config/node-specs.js';
import { lockerSettings, validateResource } from '../config/options.js';
import type { RedisConnection } from '../driver/connection.js';
import { fenceKey, lockKey } from '../keys.js';
import { quorumOf } from '../quorum/tally.js';
import type { NodeOptions } from './node-options.js';
import { type NodeProblem, problemOf } from './unreachable.js';

/**
 * How long one node gets to connect and answer. Status reads nothing it must act on, so a
 * node that has not answered by then is reported, not waited for.
 */
export const STATUS_TIMEOUT_MS = 2_000;

/**
 * Whether the lock is held: by a majority of the nodes (`held`), certainly not (`free`), or
 * the nodes that could not be read decide it (`unknown`, e.g. a majority unreachable).
 */
export type LockState = 'held' | 'free' | 'unknown';

/** One node's view of a lock. */
export interface NodeStatus {
  readonly node: string;
  readonly held: boolean;
  /** The key's PTTL; `null` when the key is absent or has no expiry. */
  readonly remainingMs: number | null;
  readonly fence: string | null;
  /** Why the node could not be read; the other fields then say nothing. */
  readonly error?: string;
  /** The kind of `error`: `down`, `timeout`, `tls`, `auth` or `other`. */
  readonly problem?: NodeProblem;
}

/** What `distlock status` reports. */
export interface LockStatus {
  readonly resource: string;
  readonly state: LockState;
  /** `state === 'held'`. */
  readonly held: boolean;
  /** On how many nodes the lock key exists. */
  readonly heldOn: number;
  readonly nodes: readonly NodeStatus[];
}

/**
 * Reads, on every node, whether `resource` is locked, for how long, and its fence counter,
 * through the driver and under a locker's `prefix` (the default one unless given).
 * Validates the node URLs as a `Locker` does: a bad one throws `InvalidArgumentError`
 * before any connection is opened.
 */
export async function lockStatus(
  { nodes: urls, tls }: NodeOptions,
  resource: string,
  { prefix, timeoutMs = STATUS_TIMEOUT_MS }: { prefix?: string; timeoutMs?: number } = {},
): Promise<LockStatus> {
  validateResource(resource, 'key');
  // The same key layout as a locker on these nodes with this prefix.
  const settings = lockerSettings({ nodes: urls, ...(prefix === undefined ? {} : { prefix }) });
  const { connections, owned } = resolveNodes(urls, tls);
  try {
    const key = lockKey(settings.prefix, resource);
    const nodes = await Promise.all(connections.map((c) => nodeStatus(c, key, timeoutMs)));
    const heldOn = nodes.filter((n) => n.held).length;
    const unread = nodes.filter((n) => n.error !== undefined).length;
    const quorum = quorumOf(nodes.length);
    const state: LockState =
      heldOn >= quorum ? 'held' : heldOn + unread >= quorum ? 'unknown' : 'free';
    return { resource, state, held: state === 'held', heldOn, nodes };
  } finally {
    await Promise.all(owned.map((connection) => connection.close()));
  }
}

/** Human-readable lines for {@link lockStatus}. */
export function formatStatus(status: LockStatus): string[] {
  const { resource, state, heldOn, nodes } = status;
  const unread = nodes.filter((n) => n.error !== undefined).length;
  const lines = [
    `${resource}: ${state} (locked on ${heldOn} of ${nodes.length} node(s)${unread > 0 ? `, ${unread} unreachable` : ''})`,
  ];
  for (const n of nodes) {
    const detail = n.error
      ? `unreachable: ${n.error}`
      : n.held
        ? `held, ${n.remainingMs} ms left`
        : 'free';
    lines.push(`  ${n.node}  ${detail}${n.fence === null ? '' : `, fence ${n.fence}`}`);
  }
  return lines;
}

async function nodeStatus(
  connection: RedisConnection,
  key: string,
  timeoutMs: number,
): Promise<NodeStatus> {
  const node = connection.name;
  let timer: NodeJS.Timeout | undefined;
  const silence = new Error(`no answer within ${timeoutMs} ms`);
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(silence), timeoutMs);
  });
  try {
    const [pttl, fence] = await Promise.race([readKeys(connection, key, timeoutMs), timedOut]);
    return { node, held: pttl !== -2, remainingMs: pttl >= 0 ? pttl : null, fence };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const problem = error === silence ? 'timeout' : problemOf(error);
    return { node, held: false, remainingMs: null, fence: null, error: message, problem };
  } finally {
    clearTimeout(timer);
  }
}

/** The lock key's PTTL (-2: absent, -1: no expiry) and the fence counter. */
async function readKeys(
  connection: RedisConnection,
  key: string,
  timeoutMs: number,
): Promise<[number, string | null]> {
  await connection.connect?.(timeoutMs);
  const [pttl, fence] = await Promise.all([
    connection.send('PTTL', [key], timeoutMs),
    connection.send('GET', [fenceKey(key)], timeoutMs),
  ]);
  if (typeof pttl !== 'number') throw new Error(`unexpected reply to PTTL: ${String(pttl)}`);
  if (fence !== null && typeof fence !== 'string') {
    throw new Error(`unexpected reply to GET: ${String(fence)}`);
  }
  return [pttl, fence];
}
