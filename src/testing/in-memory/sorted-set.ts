/**
 * A Redis sorted set: members ordered by score, then by their bytes. Sets are small here, so
 * a sorted array with binary search serves.
 *
 * Redis keeps a small set in a listpack (at most 128 members of at most 64 bytes), which
 * stores an integral score as an integer: a score of -0 reads back as 0 there, and as -0
 * once the set became a skiplist. `compact` follows that conversion, which Redis never undoes.
 */

/** `zset-max-listpack-entries` and `zset-max-listpack-value`, Redis 7.0's defaults. */
const LISTPACK_ENTRIES = 128;
const LISTPACK_VALUE = 64;

export interface Scored {
  readonly member: string;
  readonly score: number;
}

export class SortedSet {
  readonly #scores = new Map<string, number>();
  #ordered: Scored[] = [];
  #compact: boolean;

  /**
   * A set created by ZADD for `count` members, the first of them `firstLength` bytes long
   * (Redis 7.0's `zsetTypeCreate` as ZADD calls it).
   */
  constructor(count: number, firstLength: number) {
    this.#compact = count <= LISTPACK_ENTRIES && firstLength <= LISTPACK_VALUE;
  }

  /** A copy that changes apart from this set (a replica's). */
  copy(): SortedSet {
    const copy = new SortedSet(0, 0);
    copy.#compact = this.#compact;
    for (const [member, score] of this.#scores) copy.#scores.set(member, score);
    copy.#ordered = [...this.#ordered];
    return copy;
  }

  get size(): number {
    return this.#ordered.length;
  }

  score(member: string): number | undefined {
    return this.#scores.get(member);
  }

  /** Sets `member`'s score (adding it when new). */
  set(member: string, score: number): void {
    if (!this.#scores.has(member) && this.#scores.size + 1 > LISTPACK_ENTRIES) {
      this.#compact = false;
    }
    if (member.length > LISTPACK_VALUE) this.#compact = false;
    const stored = this.#compact && score === 0 ? 0 : score;
    this.remove(member);
    this.#scores.set(member, stored);
    const entry = { member, score: stored };
    this.#ordered.splice(this.#insertionPoint(entry), 0, entry);
  }

  /** Removes `member`: whether it was there. */
  remove(member: string): boolean {
    const score = this.#scores.get(member);
    if (score === undefined) return false;
    this.#scores.delete(member);
    this.#ordered.splice(this.#insertionPoint({ member, score }), 1);
    return true;
  }

  /** 0-based rank of `member`, lowest score first. */
  rank(member: string): number | undefined {
    const score = this.#scores.get(member);
    return score === undefined ? undefined : this.#insertionPoint({ member, score });
  }

  /** Members from rank `start` to `stop` inclusive (already clamped by the caller). */
  byRank(start: number, stop: number): Scored[] {
    return this.#ordered.slice(start, stop + 1);
  }

  /** Members whose score lies within the bounds, in order. */
  byScore(min: number, minExclusive: boolean, max: number, maxExclusive: boolean): Scored[] {
    return this.#ordered.filter(
      ({ score }) =>
        (minExclusive ? score > min : score >= min) && (maxExclusive ? score < max : score <= max),
    );
  }

  all(): readonly Scored[] {
    return this.#ordered;
  }

  /** The first index whose entry does not sort before `entry`. */
  #insertionPoint(entry: Scored): number {
    let low = 0;
    let high = this.#ordered.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (before(this.#ordered[middle] as Scored, entry)) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

function before(a: Scored, b: Scored): boolean {
  if (a.score !== b.score) return a.score < b.score;
  return a.member < b.member;
}
