/**
 * The oracle of `Election.leader()`: a read names a leader only while its leadership stands.
 *
 * A resignation that resolved deleted the leadership on a majority, and a read needs a
 * majority reporting one term: the two majorities share a node that dropped it before the read
 * began. So a read that began after a resignation resolved must not name the resigned term.
 * And a term is one leadership's: a read must name it with that leader's value.
 *
 * A lease that ran out unrenewed ends on each node by that node's clock, which the faults
 * move: the read script's check of the lease is held by the resignations (a read that ignored
 * the lease would name a resigned leader too), not by a bound on expiry.
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

/** What is wrong with `reads`, given the leaderships `terms`. */
export function leaderReadViolations(
  reads: readonly LeaderRead[],
  terms: readonly Term[],
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
    if (last <= read.from) {
      found.push(`${when}: term ${term}, resigned at ${last.toFixed(3)}`);
    }
  }
  return found;
}
