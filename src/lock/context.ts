import type { Clock } from '../clock.js';
import type { RedisConnection } from '../driver/connection.js';
import type { LockerSettings } from '../options.js';
import { fanOut } from '../quorum/fan-out.js';
import type { NodeResult } from '../quorum/node-result.js';
import { defaultNodeTimeoutMs } from '../quorum/validity.js';
import { releaseScript } from '../scripts/release.js';
import { runScript } from '../scripts/script.js';

/** What every lock operation of one locker shares. */
export interface LockContext {
  readonly nodes: readonly RedisConnection[];
  readonly settings: LockerSettings;
  readonly clock: Clock;
}

/** The per-node timeout for a lease of `ttlMs`. */
export function nodeTimeoutFor(context: LockContext, ttlMs: number): number {
  return context.settings.nodeTimeoutMs ?? defaultNodeTimeoutMs(ttlMs);
}

/**
 * Compare-and-deletes `key` on the given nodes (all of them by default) and resolves once
 * each answered or timed out. Used by release and to undo failed acquisitions and extensions.
 */
export function deleteIfOwned(
  context: LockContext,
  key: string,
  token: string,
  ttlMs: number,
  nodes: readonly RedisConnection[] = context.nodes,
) {
  return fanOut(
    nodes,
    nodeTimeoutFor(context, ttlMs),
    context.clock,
    (node, signal) => runScript(node, releaseScript, [key], [token], signal),
    (deleted) => (deleted === 1 ? { vote: 'yes' } : { vote: 'no' }),
  );
}

/** Nodes that may hold our token: every node but those that answered a plain "no". */
export function nodesThatMayHoldToken(
  context: LockContext,
  results: readonly (NodeResult | undefined)[],
): RedisConnection[] {
  return context.nodes.filter((_, index) => results[index]?.outcome !== 'no');
}
