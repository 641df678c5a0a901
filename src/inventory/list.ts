import { countedNodes } from '../engine/counted-nodes.js';
import { type ReadNodeSet, replyOfEveryNode } from '../engine/node-replies.js';
import { decodedOwner } from '../engine/token.js';
import { NoQuorumError } from '../errors.js';
import {
  electionKeys,
  permitKey,
  queueKeys,
  readWriteKey,
  readWriteKeys,
  TICK_PREFIX,
} from '../keys.js';
import { leaderOf } from '../kinds/election/leader-read.js';
import { readLeaderScript } from '../kinds/election/lua/read-leader.js';
import { inspectLock, type LockInspection } from '../kinds/mutex/inspect.js';
import type { NodeResult } from '../node-result.js';
import { quorumOf } from '../quorum/tally.js';
import { type HoldsOnNode, inspectHoldsScript } from './lua/inspect-holds.js';
import { nameMatcher, type ResourceKind, type ResourceRef, resourceOf } from './resource-keys.js';
import { globLiteral, scanNode } from './scan.js';

export type { ResourceKind };

/** A resource that is held or waited for, as {@link Locker.list} reports it. */
export interface ListedResource {
  readonly kind: ResourceKind;
  /** Its name: the resource, semaphore, read-write lock or election; a tick's job name. */
  readonly name: string;
  /** Held on a majority of the nodes (a semaphore or read-write lock: one hold at least). */
  readonly held: boolean;
  /** Holders: 1 for a held lock, tick or election; permits in use; readers, or 1 writer. */
  readonly holders: number;
  /** A semaphore's permits, as its holders' labels say; absent when none said. */
  readonly size?: number;
  /** A read-write lock's holder is a writer. */
  readonly writer?: boolean;
  /** The owner label of each holder that has one (`<hostname>:<pid>` by default). */
  readonly owners: readonly string[];
  /** When a single holder's acquisition began (a lock, tick, election, writer), by its clock. */
  readonly since: Date | null;
  /** How long a majority keeps it if nobody extends it (ms; the longest hold of a set). */
  readonly remainingMs: number | null;
  /** The fence counter of a lock or tick; an election's term. */
  readonly fence: bigint | null;
  /** Waiters in line (the most any node has). */
  readonly waiters: number;
  /** An election's leader: the value it proclaimed; `null` when none has a majority. */
  readonly leader?: string | null;
  /**
   * The nodes that could not be read, each with why; also a node whose view does not count
   * (it became another server, see {@link Locker.list}).
   */
  readonly unreachable: readonly { readonly node: string; readonly error: Error }[];
}

/** What a listing reads with (see `countedNodes`). */
export type ListContext = Parameters<typeof countedNodes>[0];

/** Resources read at once: each costs one script per node (two for some kinds). */
const READ_AT_ONCE = 32;

/**
 * The resources under the locker's prefix that are held or waited for, in name order: keys
 * found by `SCAN` on every node (every master of a Cluster), grouped by resource, then each
 * read on every node whose view counts. Rejects with `NoQuorumError` when fewer than a
 * majority of the nodes could be scanned (a resource held on a majority is then not sure to
 * be found), and with the identity check's refusal (an `InvalidArgumentError` naming a server
 * listed twice).
 */
export async function* listResources(
  context: ListContext,
  { match, timeoutMs }: { readonly match: string | undefined; readonly timeoutMs: number },
): AsyncGenerator<ListedResource> {
  const { prefix } = context.settings;
  const scans = await Promise.all(
    context.nodes.map((node) => scanNode(node, `${globLiteral(prefix)}*`, timeoutMs)),
  );
  const scanned = scans.filter((scan) => 'keys' in scan);
  const quorum = quorumOf(context.nodes.length);
  if (scanned.length < quorum) {
    const results: NodeResult[] = scans.map((scan) =>
      'error' in scan
        ? { node: scan.node, outcome: 'error', error: scan.error }
        : { node: scan.node, outcome: 'yes', latencyMs: 0 },
    );
    const message = `Listing what is locked under "${prefix}": fewer than ${quorum} of ${context.nodes.length} node(s) could be scanned.`;
    throw new NoQuorumError(match ?? '*', message, results);
  }
  const wanted = nameMatcher(match);
  const found = new Map<string, ResourceRef>();
  for (const scan of scanned) {
    for (const key of 'keys' in scan ? scan.keys : []) {
      const ref = resourceOf(prefix, key);
      if (ref && wanted(ref.name)) found.set(`${ref.name}\0${ref.kind}`, ref);
    }
  }
  const refs = [...found.keys()].sort().map((id) => found.get(id) as ResourceRef);
  // Each read asks for the nodes' identities once it has its answers: a node that reconnected
  // during a long listing says again which server it is. Nothing is sent when none is due.
  const counted = countedNodes(context, timeoutMs);
  for (let first = 0; first < refs.length; first += READ_AT_ONCE) {
    const batch = refs.slice(first, first + READ_AT_ONCE);
    const read = await Promise.all(batch.map((ref) => readResource(counted, ref, timeoutMs)));
    for (const listed of read) if (listed.held || listed.waiters > 0) yield listed;
  }
}

/** Reads one resource on every node. */
function readResource(
  context: ReadNodeSet,
  { kind, name }: ResourceRef,
  timeoutMs: number,
): Promise<ListedResource> {
  const { prefix } = context.settings;
  switch (kind) {
    case 'lock':
      return inspectLock(context, name, timeoutMs).then((seen) => lockListing(kind, name, seen));
    case 'tick':
      return inspectLock(context, `${TICK_PREFIX}${name}`, timeoutMs).then((seen) =>
        lockListing(kind, name, seen),
      );
    case 'election':
      return readElection(context, name, timeoutMs);
    case 'semaphore': {
      const key = permitKey(prefix, name);
      return readHolds(context, name, key, queueKeys(key).deadlines, timeoutMs).then((holds) =>
        setListing(kind, name, holds, context.nodes.length),
      );
    }
    case 'read-write':
      return readReadWrite(context, name, timeoutMs);
  }
}

function lockListing(kind: ResourceKind, name: string, seen: LockInspection): ListedResource {
  return {
    kind,
    name,
    held: seen.held,
    holders: seen.held ? 1 : 0,
    owners: seen.owner === null ? [] : [seen.owner],
    since: seen.since,
    remainingMs: seen.remainingMs,
    fence: seen.fence,
    waiters: seen.waiters,
    unreachable: unreachableOf(seen.nodes),
  };
}

function unreachableOf(
  nodes: readonly { node: string; reachable: boolean; error?: Error }[],
): ListedResource['unreachable'] {
  return nodes.flatMap(({ node, reachable, error }) =>
    reachable || !error ? [] : [{ node, error }],
  );
}

/** An election: its leadership's lock, and the leader a majority names. */
async function readElection(
  context: ReadNodeSet,
  name: string,
  timeoutMs: number,
): Promise<ListedResource> {
  const keys = electionKeys(context.settings.prefix, name);
  const [seen, views] = await Promise.all([
    inspectLock(context, name, timeoutMs, keys.lock),
    replyOfEveryNode(context, timeoutMs, `the leader of "${name}"`, (node, ms) =>
      readLeaderScript.run(node, { key: keys.lock, leaderKey: keys.leader }, ms),
    ),
  ]);
  const leader = leaderOf(
    views.map((view) => ('reply' in view ? view.reply : undefined)),
    context.nodes.length,
  );
  // A node is unreachable where either read failed (the inspection's error first).
  const unreachable = seen.nodes.flatMap(({ node, reachable, error }, index) => {
    if (!reachable && error) return [{ node, error }];
    const view = views[index];
    return view && 'error' in view ? [{ node: view.node, error: view.error }] : [];
  });
  return {
    ...lockListing('election', name, seen),
    fence: leader?.term ?? seen.fence,
    leader: leader?.value ?? null,
    unreachable,
  };
}

/** Every node's view of a set of holds, or its error. */
type HoldsViews = readonly (
  | { node: string; reply: HoldsOnNode }
  | { node: string; error: Error }
)[];

function readHolds(
  context: ReadNodeSet,
  name: string,
  key: string,
  deadlines: string,
  timeoutMs: number,
): Promise<HoldsViews> {
  return replyOfEveryNode(context, timeoutMs, `the holds of "${name}"`, (node, ms) =>
    inspectHoldsScript.run(node, { key, deadlines }, ms),
  );
}

/**
 * A set of holds, as a majority sees it: the holds that a majority of the nodes keep at
 * least (the quorum-th largest count), the longest of them, and the owners on the node that
 * has the most.
 */
function setListing(
  kind: ResourceKind,
  name: string,
  views: HoldsViews,
  nodeCount: number,
): ListedResource {
  const read = views.flatMap((view) => ('reply' in view ? [view.reply] : []));
  const quorum = quorumOf(nodeCount);
  const nth = (values: number[]) => values.sort((a, b) => b - a)[quorum - 1] ?? 0;
  const holders = nth(read.map((view) => view.holds));
  const longest = nth(read.map((view) => view.remainingMs ?? 0));
  const most = [...read].sort((a, b) => b.holds - a.holds)[0];
  const size = Math.max(-1, ...read.map((view) => view.size ?? -1));
  return {
    kind,
    name,
    held: holders > 0,
    holders,
    ...(size > 0 && kind === 'semaphore' ? { size } : {}),
    owners: holders > 0 ? (most?.owners ?? []).map(decodedOwner) : [],
    since: null,
    remainingMs: holders > 0 ? longest : null,
    fence: null,
    waiters: Math.max(0, ...read.map((view) => view.waiters)),
    unreachable: views.flatMap((view) => ('error' in view ? [view] : [])),
  };
}

/** A read-write lock: its writer (a lock of its own) or its readers (a set of holds). */
async function readReadWrite(
  context: ReadNodeSet,
  name: string,
  timeoutMs: number,
): Promise<ListedResource> {
  const keys = readWriteKeys(readWriteKey(context.settings.prefix, name));
  const [writer, readers] = await Promise.all([
    inspectLock(context, name, timeoutMs, keys.writer),
    readHolds(context, name, keys.readers, keys.deadlines, timeoutMs),
  ]);
  const asSet = setListing('read-write', name, readers, context.nodes.length);
  if (!writer.held) return { ...asSet, writer: false };
  return { ...lockListing('read-write', name, writer), writer: true, waiters: asSet.waiters };
}
