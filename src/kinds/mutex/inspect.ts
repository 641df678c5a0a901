import { type ReadNodeSet, replyOfEveryNode } from '../../engine/node-replies.js';
import { decodedOwner } from '../../engine/token.js';
import { lockKey } from '../../keys.js';
import { quorumOf } from '../../quorum/tally.js';
import { inspectLockScript, type LockOnNode } from './lua/inspect-lock.js';

/**
 * Whether a lock is held: by a quorum of the nodes (`held`), certainly not (`free`), or the
 * nodes that could not be read decide it (`unknown`: too many unreachable to tell).
 */
export type LockState = 'held' | 'free' | 'unknown';

/** One node's view of a lock, as {@link Locker.inspect} reports it. Never the token. */
export interface NodeInspection {
  /** The node's name (`host:port`, `cluster ...`). */
  readonly node: string;
  /** Whether the node answered; when not, `error` says why and the fields below say nothing. */
  readonly reachable: boolean;
  /** Why the node could not be read: its error, or a `NoReplyError` when it was silent. */
  readonly error?: Error;
  /** Whether the lock key exists there (also when just handed to a waiter). */
  readonly held: boolean;
  /** How long the key still lives there (its PTTL, ms); `null` when absent or without expiry. */
  readonly remainingMs: number | null;
  /** The node's fence counter: the last fence drawn there; `null` when none ever was. */
  readonly fence: bigint | null;
  /** Waiters in the lock's line there whose deadline has not passed. */
  readonly waiters: number;
  /** Who holds the key there: its holder's owner label; `null` when none (or not held). */
  readonly owner: string | null;
  /** When that holder's acquisition began, by its clock; `null` with no owner. */
  readonly since: Date | null;
}

/** What {@link Locker.inspect} reports: a summary, then each node's view. */
export interface LockInspection {
  readonly resource: string;
  readonly state: LockState;
  /** `state === 'held'`. */
  readonly held: boolean;
  /** On how many nodes the lock key exists. */
  readonly heldOn: number;
  /** How many nodes must hold the key for the lock to be held (a majority). */
  readonly quorum: number;
  /**
   * For how long at least a quorum of nodes keeps the key if the holder neither extends nor
   * releases it: the quorum-th longest `remainingMs`. `null` unless held, and when a quorum
   * keeps the key without expiry (a key PERSISTed by hand: it stays until deleted). An
   * estimate for humans: the holder's own validity is shorter (it also subtracts its clock
   * drift).
   */
  readonly remainingMs: number | null;
  /** The largest fence counter among the nodes read: the fence of the last fenced holder. */
  readonly fence: bigint | null;
  /** The most waiters any node read has in line (each waiter joins the line on every node). */
  readonly waiters: number;
  /**
   * Who holds it: the owner label that most nodes holding the key name (a locker's `owner`,
   * by default `<hostname>:<pid>`); `null` when the holder gave none, or nobody holds it.
   */
  readonly owner: string | null;
  /** When that holder's acquisition began, in the servers' time; `null` with no owner. */
  readonly since: Date | null;
  /** Each node's view, in the order the nodes were given. */
  readonly nodes: readonly NodeInspection[];
}

/**
 * Reads the lock on `resource` on every node at once, each given at most `timeoutMs`. Never
 * rejects: a node that fails is reported as unreachable, with its cause. `key`: the lock's
 * key when another kind keeps a lock of its own (an election's leadership).
 */
export async function inspectLock(
  context: ReadNodeSet,
  resource: string,
  timeoutMs: number,
  key = lockKey(context.settings.prefix, resource),
): Promise<LockInspection> {
  const replies = await replyOfEveryNode(
    context,
    timeoutMs,
    `the inspection of "${resource}"`,
    (node, nodeTimeoutMs) => inspectLockScript.run(node, { key }, nodeTimeoutMs),
  );
  const nodes = replies.map((answer) =>
    'reply' in answer
      ? nodeView(answer.node, answer.reply)
      : { node: answer.node, reachable: false, error: answer.error, ...UNREAD },
  );
  return summary(resource, nodes);
}

const UNREAD = {
  held: false,
  remainingMs: null,
  fence: null,
  waiters: 0,
  owner: null,
  since: null,
} as const;

function nodeView(node: string, reply: LockOnNode): NodeInspection {
  const { pttl, fence, waiters, owner, since } = reply;
  return {
    node,
    reachable: true,
    held: pttl !== -2,
    remainingMs: pttl >= 0 ? pttl : null,
    fence: fence === null ? null : BigInt(fence),
    waiters,
    owner: owner === null ? null : decodedOwner(owner),
    since: since === null ? null : new Date(since),
  };
}

/** The owner that most of `holding` name, with its start (the first node's, on a tie). */
function mostNamed(holding: readonly NodeInspection[]): Pick<NodeInspection, 'owner' | 'since'> {
  let best: NodeInspection | undefined;
  let bestCount = 0;
  for (const node of holding) {
    if (node.owner === null) continue;
    const same = (n: NodeInspection) =>
      n.owner === node.owner && n.since?.getTime() === node.since?.getTime();
    const count = holding.filter(same).length;
    if (count > bestCount) [best, bestCount] = [node, count];
  }
  return { owner: best?.owner ?? null, since: best?.since ?? null };
}

/** The verdict over every node's view (a pure function of them). */
export function summary(resource: string, nodes: readonly NodeInspection[]): LockInspection {
  const quorum = quorumOf(nodes.length);
  const holding = nodes.filter((n) => n.held);
  const heldOn = holding.length;
  const unread = nodes.filter((n) => !n.reachable).length;
  const state: LockState =
    heldOn >= quorum ? 'held' : heldOn + unread >= quorum ? 'unknown' : 'free';
  // A key without expiry outlives every other: it sorts first.
  const lives = holding.map((n) => n.remainingMs ?? Number.POSITIVE_INFINITY).sort((a, b) => b - a);
  const quorumLives = lives[quorum - 1];
  const remainingMs =
    state === 'held' && quorumLives !== undefined && Number.isFinite(quorumLives)
      ? quorumLives
      : null;
  let fence: bigint | null = null;
  for (const n of nodes)
    if (n.fence !== null && (fence === null || n.fence > fence)) fence = n.fence;
  const waiters = Math.max(0, ...nodes.map((n) => n.waiters));
  const { owner, since } = state === 'free' ? { owner: null, since: null } : mostNamed(holding);
  return {
    resource,
    state,
    held: state === 'held',
    heldOn,
    quorum,
    remainingMs,
    fence,
    waiters,
    owner,
    since,
    nodes,
  };
}
