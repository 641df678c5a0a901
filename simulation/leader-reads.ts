/**
 * The oracle of `Election.leader()`: a read names a leader only while its leadership stands.
 *
 * A resignation that resolved deleted the leadership on a majority, and a read needs a
 * majority reporting one term: the two majorities share a node that dropped it before the read
 * began. So a read that began after a resignation resolved must not name the resigned term.
 * And a term is one leadership's: a read must name it with that leader's value.
 *
 * A lease that ran out unrenewed ends on each node by that node's clock, which the faults
 * move (a clock set back keeps a key longer, a late copy of a renewal sets it again): during
 * the workload the resignations hold the read script's check of a leader's lease only where
 * a resignation did not end the leader record. The calm holds it everywhere
 * ({@link calmReadViolations}): once every leadership ended and every lock key set before
 * is surely gone, a read names no leader.
 *
 * A failover to a replica that missed a resignation's release brings the leadership back on
 * that node; the node sits out reads for the restart grace after the change, after which a
 * leader it names is one whose lease has not run out by its clock. docs/election.md promises
 * no more than that holds "as long as no clock was set back by more than the failover took":
 * a read begun after that grace is excused where such a failover lost the release and a
 * clock was set back by more than it took, before the read ({@link FailoverExcuses}).
 */

/** One `leader()` call that answered. */
export interface LeaderRead {
  readonly client: number;
  /** When the call began and resolved (virtual ms). */
  readonly from: number;
  readonly to: number;
  /** The term and value it named; `null` for no leader. */
  readonly leader: { readonly term: bigint; readonly value: string } | null;
}

/** A leadership as its leader saw it: its term, its value, and when its resignation resolved. */
export interface Term {
  readonly term: bigint;
  readonly value: string;
  /** When `resign()` resolved `'resigned'` (virtual ms); absent if it did not. */
  resignedAt?: number;
}

/** Failovers that lost writes, and node clocks set back: what may bring a leadership back. */
export interface FailoverExcuses {
  /**
   * Each failover to a replica that lagged: from when the replica stopped replicating (a
   * write from then on is lost) to when it was promoted (virtual ms).
   */
  readonly failovers: readonly { readonly lostFrom: number; readonly promotedAt: number }[];
  /** Each time a node's clock was set back, and by how much (virtual ms). */
  readonly clockJumps: readonly { readonly at: number; readonly backMs: number }[];
  /** The restart grace: how long a node that changed server sits out reads at least. */
  readonly graceMs: number;
}

const NO_FAILOVERS: FailoverExcuses = { failovers: [], clockJumps: [], graceMs: 0 };

/**
 * Whether a read begun at `readAt` may name a leadership resigned at `resignedAt`: a failover
 * lost the release (the replica had stopped before the resignation), the read began after
 * the restart grace that followed the promotion (during it the node must not be read), and
 * some clock was set back before the read by more than that failover took.
 */
function failoverExcuses(
  resignedAt: number,
  readAt: number,
  { failovers, clockJumps, graceMs }: FailoverExcuses,
): boolean {
  return failovers.some(
    ({ lostFrom, promotedAt }) =>
      lostFrom <= resignedAt &&
      promotedAt + graceMs <= readAt &&
      clockJumps.some(({ at, backMs }) => at <= readAt && backMs > promotedAt - lostFrom),
  );
}

/** What is wrong with `reads`, given the leaderships `terms` (and what may excuse a read). */
export function leaderReadViolations(
  reads: readonly LeaderRead[],
  terms: readonly Term[],
  excuses: FailoverExcuses = NO_FAILOVERS,
): string[] {
  const found: string[] = [];
  for (const read of reads) {
    if (read.leader === null) continue;
    const { term, value } = read.leader;
    // Two leaderships share a term only after the counters were lost (see oracle.ts).
    const withTerm = terms.filter((one) => one.term === term);
    if (withTerm.length === 0) continue; // a campaign that did not win, seen in passing
    const when = `c${read.client} read at [${read.from.toFixed(3)}, ${read.to.toFixed(3)})`;
    const same = withTerm.filter((one) => one.value === value);
    if (same.length === 0) {
      const leaders = withTerm.map((one) => one.value).join(', ');
      found.push(`${when}: term ${term} with value ${value}, but its leader is ${leaders}`);
      continue;
    }
    const resigned = same.map((one) => one.resignedAt ?? Number.POSITIVE_INFINITY);
    const last = Math.max(...resigned);
    if (last <= read.from && !failoverExcuses(last, read.from, excuses)) {
      found.push(`${when}: term ${term}, resigned at ${last.toFixed(3)}`);
    }
  }
  return found;
}

/**
 * What is wrong with `reads` made in the calm after every campaign ended, all begun once the
 * election's lock keys were surely gone (`goneAt`, virtual ms): any leader they name, since
 * no leadership stands, and its record can only be one whose lease ran out (or whose
 * resignation did not reach a majority).
 */
export function calmReadViolations(reads: readonly LeaderRead[], goneAt: number): string[] {
  const found: string[] = [];
  for (const read of reads) {
    if (read.leader === null || read.from < goneAt) continue;
    const { term, value } = read.leader;
    const when = `c${read.client} read at [${read.from.toFixed(3)}, ${read.to.toFixed(3)})`;
    found.push(
      `${when}: term ${term} (${value}), though every leadership had ended and its keys were gone by ${goneAt.toFixed(3)}`,
    );
  }
  return found;
}
