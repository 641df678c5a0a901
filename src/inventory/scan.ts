import type { RedisConnection } from '../driver/connection.js';
import { replyWithin } from '../driver/reply-within.js';
import type { StallGuard } from '../driver/stall-guard.js';

/** Keys asked for per `SCAN` call: Redis's work per call, not a limit on what is found. */
export const SCAN_COUNT = 1_000;

/** What scanning one node found: its keys, or why it could not be scanned (to the end). */
export type NodeScan =
  | { readonly node: string; readonly keys: readonly string[] }
  | { readonly node: string; readonly error: Error };

/**
 * Every key matching `match` on `node`, by `SCAN` (never `KEYS`, which blocks the server):
 * on each master of a Redis Cluster, else on the one server. Each call gets `timeoutMs`.
 */
export async function scanNode(
  node: StallGuard,
  match: string,
  timeoutMs: number,
): Promise<NodeScan> {
  try {
    const masters = (await node.clusterMasters(timeoutMs)) ?? [node];
    const keys = await Promise.all(masters.map((master) => scanServer(master, match, timeoutMs)));
    return { node: node.name, keys: keys.flat() };
  } catch (error) {
    return { node: node.name, error: error instanceof Error ? error : new Error(String(error)) };
  }
}

/** Every key matching `match` on one server: `SCAN` until its cursor comes back to 0. */
async function scanServer(
  server: RedisConnection,
  match: string,
  timeoutMs: number,
): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const reply = await replyWithin(
      server.send('SCAN', [cursor, 'MATCH', match, 'COUNT', SCAN_COUNT], timeoutMs),
      server,
      'SCAN',
      timeoutMs,
    );
    const [next, found] = Array.isArray(reply) ? reply : [];
    if (typeof next !== 'string' || !Array.isArray(found)) {
      throw new Error(`unexpected reply to SCAN from ${server.name}: ${String(reply)}`);
    }
    for (const key of found) keys.push(String(key));
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** `text` as a glob that matches it literally (for the prefix before a name pattern). */
export function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
