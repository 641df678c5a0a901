import { validateResource } from '../config/options.js';
import { NoReplyError } from '../errors.js';
import type { LockState, NodeInspection } from '../kinds/mutex/inspect.js';
import { withLocker } from './command-line.js';
import { humanDuration } from './duration.js';
import type { NodeOptions } from './node-options.js';
import { type NodeProblem, problemOf } from './unreachable.js';

export type { LockState };

/**
 * How long one node gets to connect and answer. Status reads nothing it must act on, so a
 * node that has not answered by then is reported, not waited for.
 */
export const STATUS_TIMEOUT_MS = 2_000;

/** One node's view of a lock, as `distlock status --json` prints it. */
export interface NodeStatus {
  readonly node: string;
  readonly held: boolean;
  /** The key's PTTL; `null` when the key is absent or has no expiry. */
  readonly remainingMs: number | null;
  readonly fence: string | null;
  /** Waiters in the lock's line on this node. */
  readonly waiters: number;
  /** The holder's owner label there; `null` when it gave none, or the key is absent. */
  readonly owner: string | null;
  /** When that holder's acquisition began (ISO 8601, by its clock); `null` with no owner. */
  readonly since: string | null;
  /** Why the node could not be read; the other fields then say nothing. */
  readonly error?: string;
  /** The kind of `error`: `down`, `timeout`, `tls`, `auth` or `other`. */
  readonly problem?: NodeProblem;
}

/** What `distlock status` reports: `Locker.inspect`'s result, in JSON terms. */
export interface LockStatus {
  readonly resource: string;
  readonly state: LockState;
  /** `state === 'held'`. */
  readonly held: boolean;
  /** On how many nodes the lock key exists. */
  readonly heldOn: number;
  /** How many nodes must hold it for the lock to be held. */
  readonly quorum: number;
  /**
   * For how long a quorum of nodes keeps the key at least (see `LockInspection`); `null`
   * when free, or when held by a quorum without expiry.
   */
  readonly remainingMs: number | null;
  /** The largest fence counter read. */
  readonly fence: string | null;
  /** The most waiters any node has in line. */
  readonly waiters: number;
  /** Who holds it: the owner label most holding nodes name; `null` when none. */
  readonly owner: string | null;
  /** When that holder's acquisition began (ISO 8601, by its clock); `null` with no owner. */
  readonly since: string | null;
  readonly nodes: readonly NodeStatus[];
}

/**
 * Reads, on every node, whether `resource` is locked, for how long, its fence counter and
 * its waiters (`Locker.inspect`), under a locker's `prefix` (the default one unless given).
 * A bad node URL or prefix throws `InvalidArgumentError` before any connection is opened.
 */
export function lockStatus(
  nodes: NodeOptions,
  resource: string,
  { prefix, timeoutMs = STATUS_TIMEOUT_MS }: { prefix?: string; timeoutMs?: number } = {},
): Promise<LockStatus> {
  validateResource(resource, 'key');
  return withLocker(
    nodes,
    async (locker) => {
      const found = await locker.inspect(resource, { timeoutMs });
      return {
        ...found,
        fence: found.fence?.toString() ?? null,
        since: found.since?.toISOString() ?? null,
        nodes: found.nodes.map(nodeStatus),
      };
    },
    { ...(prefix === undefined ? {} : { prefix }), reads: true },
  );
}

/**
 * Human-readable lines for {@link lockStatus}. `cron`: the lock is a cron job's tick lock
 * (`status --cron`), whose TTL is `--at-most` and says when it ends at the latest, not how
 * long the job will run: it ends when the job does (once `--at-least` has passed).
 */
export function formatStatus(status: LockStatus, { cron = false } = {}): string[] {
  const { resource, state, heldOn, nodes, waiters } = status;
  const unread = nodes.filter((n) => n.error !== undefined).length;
  // Held with no remainingMs: a quorum keeps the key without expiry (PERSISTed by hand).
  const forever =
    state === 'held' && status.remainingMs === null
      ? ', without expiry on a quorum: held until deleted (distlock break)'
      : '';
  const lines = [
    `${resource}: ${state} (locked on ${heldOn} of ${nodes.length} node(s)${unread > 0 ? `, ${unread} unreachable` : ''})${forever}${waiting(waiters)}${heldBy(status)}`,
  ];
  for (const n of nodes) {
    const detail = n.error
      ? `unreachable: ${n.error}`
      : n.held
        ? held(n.remainingMs, cron)
        : 'free';
    const fence = n.fence === null ? '' : `, fence ${n.fence}`;
    // A node's holder is named where it is not the one named above (a hold being taken over).
    const other = n.owner !== status.owner || n.since !== status.since ? heldBy(n) : '';
    lines.push(`  ${n.node}  ${detail}${fence}${waiting(n.waiters)}${other}`);
  }
  return lines;
}

/** `, by web-1:4242 since 2026-11-29T14:03:12.345Z`, or nothing for a holder without a label. */
function heldBy({ owner, since }: Pick<NodeStatus, 'owner' | 'since'>): string {
  if (owner === null) return '';
  return `, by ${JSON.stringify(owner).slice(1, -1)}${since === null ? '' : ` since ${since}`}`;
}

function held(remainingMs: number | null, cron: boolean): string {
  if (remainingMs === null) return 'held, without expiry';
  if (!cron) return `held, ${remainingMs} ms left`;
  const atMost = humanDuration(remainingMs);
  return `held until the tick's job ends (and --at-least has passed), at most ${atMost} more`;
}

function waiting(waiters: number): string {
  return waiters > 0 ? `, ${waiters} waiting` : '';
}

function nodeStatus(n: NodeInspection): NodeStatus {
  const { node, held, remainingMs, fence, waiters, owner, since, error } = n;
  const view = {
    node,
    held,
    remainingMs,
    fence: fence?.toString() ?? null,
    waiters,
    owner,
    since: since?.toISOString() ?? null,
  };
  return error ? { ...view, ...nodeFailure(error) } : view;
}

/** Why a node failed, for the command line: its message and the kind of problem. */
export function nodeFailure(error: Error): { error: string; problem: NodeProblem } {
  if (error instanceof NoReplyError) {
    return { error: `no answer within ${error.timeoutMs} ms`, problem: 'timeout' };
  }
  return { error: error.message, problem: problemOf(error) };
}
