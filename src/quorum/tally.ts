/** Votes needed out of `nodeCount`: a strict majority (N/2 + 1). One node is a quorum of one. */
export function quorumOf(nodeCount: number): number {
  return Math.floor(nodeCount / 2) + 1;
}

/** Whether the votes so far already decide the outcome. */
export type Verdict = 'quorum' | 'no-quorum' | 'open';

/**
 * The verdict once `yes` nodes agreed and `against` nodes refused, failed or timed out.
 * It is certain as soon as `quorum` (a majority unless told) agreed, or so many did not that
 * it can no longer be reached; stragglers are not waited for.
 */
export function verdictOf(
  yes: number,
  against: number,
  nodeCount: number,
  quorum = quorumOf(nodeCount),
): Verdict {
  if (yes >= quorum) return 'quorum';
  if (against > nodeCount - quorum) return 'no-quorum';
  return 'open';
}
