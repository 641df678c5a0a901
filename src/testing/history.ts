import { readFileSync } from 'node:fs';

/**
 * One holding of a lock, as a worker saw it: from the instant `acquire` returned to the instant
 * the worker stopped using the lock (before it called `release`). Times are monotonic ms from
 * the same machine's clock (`process.hrtime`), so they compare across processes.
 */
export interface Holding {
  readonly type: 'holding';
  readonly worker: string;
  readonly resource: string;
  /**
   * What was held: the lock (the default) or a write lock excludes every other holding; read
   * locks exclude only writers; a semaphore permit admits `permits` holdings at once.
   */
  readonly mode?: 'lock' | 'read' | 'write' | 'permit';
  /** With `mode: 'permit'`: how many permits the semaphore has. */
  readonly permits?: number;
  /** The lock's fence as a decimal string, when fencing was on. */
  readonly fence?: string;
  readonly acquiredAt: number;
  readonly releasedAt: number;
}

/** A write to the protected resource, made while holding the lock, and its outcome. */
export interface Write {
  readonly type: 'write';
  readonly worker: string;
  readonly resource: string;
  readonly fence?: string;
  /** The value written (a counter: what was read, plus one). */
  readonly value: number;
  /** When the store acknowledged (or refused) the write. */
  readonly at: number;
  readonly outcome: 'applied' | 'stale';
}

/** An event of a history. */
export type HistoryEvent = Holding | Write;

/** What {@link checkHistory} found; each list is empty in a correct run. */
export interface HistoryReport {
  readonly holdings: number;
  readonly writes: number;
  readonly appliedWrites: number;
  /**
   * Two holdings of one resource that overlap in time although one excludes the other (two
   * locks, a writer and anyone): mutual exclusion was violated.
   */
  readonly overlaps: readonly { readonly first: Holding; readonly second: Holding }[];
  /** Instants at which a semaphore had more holders than permits. */
  readonly excessHolders: readonly {
    readonly resource: string;
    readonly at: number;
    readonly holders: number;
    readonly permits: number;
  }[];
  /**
   * Applied writes whose fence is smaller than that of a write the store applied before (the
   * store's order: by the counter's value, each applied write being one more than it read).
   */
  readonly fencesOutOfOrder: readonly { readonly earlier: Write; readonly later: Write }[];
  /** Per resource: applied increments that the final value does not account for. */
  readonly lostWrites: readonly {
    readonly resource: string;
    readonly expected: number;
    readonly final: number;
  }[];
  /** Lock keys still present on some node after the longest TTL. */
  readonly leftoverKeys: readonly string[];
  /** Whether every list above is empty. */
  readonly ok: boolean;
}

/**
 * Checks a history of holdings and writes on counters (each applied write stores what its
 * writer read plus one, starting from 0):
 * - overlapping holdings of a resource that exclude each other (mutual exclusion violations),
 *   and more semaphore holders at once than permits;
 * - fenced writes applied out of fence order;
 * - acknowledged writes lost: the final value must equal the number of applied writes;
 * - lock keys left on any node after the longest TTL (`leftoverKeys`, gathered by the caller).
 */
export function checkHistory(
  events: readonly HistoryEvent[],
  finalValues: ReadonlyMap<string, number>,
  leftoverKeys: readonly string[] = [],
): HistoryReport {
  const holdings = events.filter((e): e is Holding => e.type === 'holding');
  const writes = events.filter((e): e is Write => e.type === 'write');
  const applied = writes.filter((w) => w.outcome === 'applied');
  const { overlaps, excessHolders } = findConflicts(holdings);
  const fencesOutOfOrder = findFenceInversions(applied);
  const lostWrites = [...group(applied, (w) => w.resource)].flatMap(([resource, list]) => {
    const final = finalValues.get(resource) ?? 0;
    return final === list.length ? [] : [{ resource, expected: list.length, final }];
  });
  return {
    holdings: holdings.length,
    writes: writes.length,
    appliedWrites: applied.length,
    overlaps,
    excessHolders,
    fencesOutOfOrder,
    lostWrites,
    leftoverKeys,
    ok:
      overlaps.length === 0 &&
      excessHolders.length === 0 &&
      fencesOutOfOrder.length === 0 &&
      lostWrites.length === 0 &&
      leftoverKeys.length === 0,
  };
}

/** Reads histories written as JSON lines (one event per line) by workers. */
export function readHistory(files: readonly string[]): HistoryEvent[] {
  return files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as HistoryEvent),
  );
}

/**
 * Whether `a` and `b` may not be held at once: anything but two read locks or two permits
 * (those are counted instead).
 */
function excludes(a: Holding, b: Holding): boolean {
  return !(a.mode === b.mode && (a.mode === 'read' || a.mode === 'permit'));
}

/**
 * Sweeps each resource's holdings in order of acquisition. A holding that starts while one it
 * excludes is still held is an overlap (reported once, with the one held longest); a permit
 * that starts while `permits` others are held is an excess.
 */
function findConflicts(holdings: readonly Holding[]) {
  const overlaps: { first: Holding; second: Holding }[] = [];
  const excessHolders: { resource: string; at: number; holders: number; permits: number }[] = [];
  for (const [resource, list] of group(holdings, (h) => h.resource)) {
    const sorted = [...list].sort((a, b) => a.acquiredAt - b.acquiredAt);
    let held: Holding[] = [];
    for (const holding of sorted) {
      held = held.filter((h) => h.releasedAt > holding.acquiredAt);
      const conflicting = held.filter((h) => excludes(h, holding));
      if (conflicting.length > 0) {
        const first = conflicting.reduce((a, b) => (b.releasedAt > a.releasedAt ? b : a));
        overlaps.push({ first, second: holding });
      }
      if (holding.mode === 'permit') {
        const holders = held.filter((h) => h.mode === 'permit').length + 1;
        const permits = holding.permits ?? 1;
        if (holders > permits) {
          excessHolders.push({ resource, at: holding.acquiredAt, holders, permits });
        }
      }
      held.push(holding);
    }
  }
  return { overlaps, excessHolders };
}

function findFenceInversions(applied: readonly Write[]) {
  const inversions: { earlier: Write; later: Write }[] = [];
  for (const list of group(applied, (w) => w.resource).values()) {
    // In the store's order: each applied write stores the counter it read plus one, so its
    // value is its place (a writer paused before it noted the store's answer notes it late).
    // Equal values (a write that overwrote another, a lost write) go by when they were heard.
    const sorted = [...list].sort((a, b) => a.value - b.value || a.at - b.at);
    let highest: Write | undefined;
    for (const write of sorted) {
      if (write.fence === undefined) continue;
      if (highest?.fence !== undefined && BigInt(write.fence) < BigInt(highest.fence)) {
        inversions.push({ earlier: highest, later: write });
      }
      if (!highest || BigInt(write.fence) > BigInt(highest.fence ?? '0')) highest = write;
    }
  }
  return inversions;
}

function group<T>(items: readonly T[], by: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = by(item);
    const list = groups.get(key);
    if (list) list.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
