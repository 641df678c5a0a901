import { Redis } from 'ioredis';
import { fenceKey, lockKey } from '../keys.js';
import { DEFAULTS } from '../options.js';
import { quorumOf } from '../quorum/tally.js';

/** One node's view of a lock. */
interface NodeStatus {
  readonly node: string;
  readonly held: boolean;
  readonly remainingMs: number | null;
  readonly fence: string | null;
  readonly error?: string;
}

/** Reads, on every node, whether `resource` is locked, for how long, and its fence counter. */
export async function lockStatus(urls: readonly string[], resource: string) {
  const key = lockKey(DEFAULTS.prefix, resource);
  const nodes = await Promise.all(urls.map((url) => nodeStatus(url, key)));
  const held = nodes.filter((n) => n.held).length;
  return { resource, held: held >= quorumOf(urls.length), heldOn: held, nodes };
}

/** Human-readable lines for {@link lockStatus}. */
export function formatStatus(status: Awaited<ReturnType<typeof lockStatus>>): string[] {
  const { resource, held, heldOn, nodes } = status;
  const lines = [
    `${resource}: ${held ? 'held' : 'free'} (locked on ${heldOn} of ${nodes.length} node(s))`,
  ];
  for (const n of nodes) {
    const state = n.error
      ? `unreachable: ${n.error}`
      : n.held
        ? `held, ${n.remainingMs} ms left`
        : 'free';
    lines.push(`  ${n.node}  ${state}${n.fence === null ? '' : `, fence ${n.fence}`}`);
  }
  return lines;
}

async function nodeStatus(url: string, key: string): Promise<NodeStatus> {
  const client = new Redis(url, {
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    lazyConnect: true,
  });
  client.on('error', () => {});
  const node = `${client.options.host}:${client.options.port}`;
  try {
    await client.connect();
    const [pttl, fence] = await Promise.all([client.pttl(key), client.get(fenceKey(key))]);
    return { node, held: pttl !== -2, remainingMs: pttl >= 0 ? pttl : null, fence };
  } catch (error) {
    return { node, held: false, remainingMs: null, fence: null, error: (error as Error).message };
  } finally {
    client.disconnect();
  }
}
