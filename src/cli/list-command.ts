import type { ListedResource } from '../inventory/list.js';
import { withLocker } from './command-line.js';
import type { NodeOptions } from './node-options.js';
import { nodeFailure, STATUS_TIMEOUT_MS } from './status-command.js';

/** One resource, as `distlock ls --json` prints it (one JSON object per line). */
export type ListedJson = Omit<ListedResource, 'fence' | 'since' | 'unreachable'> & {
  readonly fence: string | null;
  readonly since: string | null;
  readonly unreachable: readonly { readonly node: string; readonly error: string }[];
};

/**
 * Everything held or waited for under `prefix` whose name matches `match`
 * (`Locker.list`). Bad nodes, prefix or pattern throw `InvalidArgumentError` before any
 * connection is opened, and one server listed twice once the nodes said which server they
 * are; fewer than a majority of nodes scanned rejects with `NoQuorumError`.
 */
export function listLocks(
  nodes: NodeOptions,
  { prefix, match }: { prefix?: string; match?: string },
): Promise<ListedResource[]> {
  return withLocker(
    nodes,
    async (locker) => {
      const found: ListedResource[] = [];
      const options = { timeoutMs: STATUS_TIMEOUT_MS, ...(match === undefined ? {} : { match }) };
      for await (const resource of locker.list(options)) found.push(resource);
      return found;
    },
    { ...(prefix === undefined ? {} : { prefix }), reads: true },
  );
}

/** A listed resource in JSON terms: fences as strings, times as ISO 8601, errors as text. */
export function listedJson(resource: ListedResource): ListedJson {
  return {
    ...resource,
    fence: resource.fence?.toString() ?? null,
    since: resource.since?.toISOString() ?? null,
    unreachable: resource.unreachable.map(({ node, error }) => ({
      node,
      error: nodeFailure(error).error,
    })),
  };
}

/**
 * One line per resource (`lock report:1  held by web-3:4242 since ..., 9874 ms left, fence 1,
 * 1 waiting`), then how many there are; at most `rows` lines in all (a terminal's height).
 */
export function formatListing(resources: readonly ListedResource[], rows = Infinity): string[] {
  const width = Math.max(0, ...resources.map((r) => `${r.kind} ${r.name}`.length));
  const lines = resources.map((r) => `${`${r.kind} ${shown(r.name)}`.padEnd(width)}  ${detail(r)}`);
  const total = `${resources.length} held or waited for`;
  if (lines.length + 1 <= rows) return [...lines, total];
  const kept = Math.max(0, rows - 2);
  return [...lines.slice(0, kept), `... ${lines.length - kept} more`, total];
}

function detail(r: ListedResource): string {
  const parts = [holding(r)];
  if (r.remainingMs !== null) parts.push(`${r.remainingMs} ms left`);
  if (r.fence !== null) parts.push(r.kind === 'election' ? `term ${r.fence}` : `fence ${r.fence}`);
  if (r.waiters > 0) parts.push(`${r.waiters} waiting`);
  if (r.unreachable.length > 0) parts.push(`${r.unreachable.length} node(s) unreachable`);
  return parts.join(', ');
}

/** Who holds it, by kind. */
function holding(r: ListedResource): string {
  const owners = r.owners.map(shown).join(', ');
  const by = owners === '' ? '' : ` by ${owners}`;
  const since = r.since === null ? '' : ` since ${r.since.toISOString()}`;
  if (!r.held) return 'free';
  switch (r.kind) {
    case 'semaphore':
      return `${r.holders}${r.size === undefined ? '' : ` of ${r.size}`} permit(s) held${by}`;
    case 'read-write':
      if (r.writer) return `written${by}${since}`;
      return `read by ${r.holders} reader(s)${owners === '' ? '' : `: ${owners}`}`;
    case 'election': {
      const leader =
        r.leader === null || r.leader === undefined ? '(none proclaimed)' : shown(r.leader);
      return `leader ${leader}${by}${since}`;
    }
    case 'tick':
      return `running${by}${since}`;
    default:
      return `held${by}${since}`;
  }
}

/** Text from Redis, on one line, escaped as JSON escapes it (quotes, control characters). */
function shown(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}
