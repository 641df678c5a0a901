import type { NodeResult } from '../node-result.js';
import { quorumOf } from '../quorum/tally.js';
import type { NodeSet } from './context.js';
import type { HoldKind } from './contract.js';
import { askEveryNode, nodeTimeoutFor } from './every-node.js';

/**
 * Settles the fencing token of a fresh majority (see docs/fencing.md): F = the largest counter
 * among the nodes that granted the lock. F counts only once a majority of all nodes holds a
 * counter >= F, so that any later majority, which shares a node with it, draws more than F.
 * When a majority already reported F (the usual case: counters move together) that is
 * already true and no round trip is needed; otherwise the counters are raised to F while the
 * lock is still ours. Resolves F, or undefined when no majority could be raised in time.
 */
export async function establishFence(
  context: NodeSet,
  {
    kind,
    key,
    token,
    attempt,
    ttlMs,
  }: { kind: HoldKind; key: string; token: string; attempt: number; ttlMs: number },
  results: readonly (NodeResult | undefined)[],
): Promise<bigint | undefined> {
  const fences = results.map((r) => (r?.outcome === 'yes' ? r.fence : undefined));
  const fence = largest(fences);
  if (fence === undefined) return undefined;
  const quorum = quorumOf(context.nodes.length);
  if (fences.filter((f) => f === fence).length >= quorum) return fence;

  const { raiseFence } = kind;
  if (!raiseFence) return undefined; // a kind that draws fences raises them too
  const raise = askEveryNode(context, nodeTimeoutFor(context, ttlMs), (node, timeoutMs, index) =>
    fences[index] === undefined
      ? Promise.resolve(0) // the lock is not ours there
      : raiseFence(node, { key, token, attempt, fence }, timeoutMs),
  );
  return (await raise.decided).quorum ? fence : undefined;
}

function largest(fences: readonly (bigint | undefined)[]): bigint | undefined {
  let max: bigint | undefined;
  for (const f of fences) if (f !== undefined && (max === undefined || f > max)) max = f;
  return max;
}
