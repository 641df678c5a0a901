/**
 * The simulation's oracle: what must hold of the holdings a schedule recorded, each as its
 * client computed it (from the moment `acquire` resolved to the earliest of its validity
 * deadline, `lock.remainingMs()` read then, the moment it stopped using the lock, and its
 * locker's close).
 */

/** One client's holding of a resource, on the virtual clock (ms). */
export interface Holding {
  readonly client: number;
  readonly resource: string;
  /** What is held: the lock, one of `permits` permits of a semaphore, a read or write side. */
  readonly kind: 'lock' | 'permit' | 'read' | 'write';
  readonly permits?: number;
  readonly from: number;
  readonly to: number;
  /** The fencing token, for a fenced acquisition. */
  readonly fence: bigint | undefined;
  /** When its release was sent, if the release answered `released` (deleted or handed on). */
  readonly releasedAt?: number;
  /** On one node: when its acquisition began, and the node's clock then (µs since the epoch). */
  readonly startedAt?: number;
  readonly clockAtStartUs?: bigint;
}

/**
 * When fences may go backwards: a node restarted without persistence lost its fence
 * counters. On N nodes nothing restores them. On one node a fence is drawn above the node's
 * clock (in µs), which makes up for the loss unless that clock is behind the earlier fence:
 * there, a loss excuses an inversion only when the node's clock as the acquisition began
 * (`Holding.clockAtStartUs`) was not past the earlier fence, or jumped back (`clockBacks`)
 * while the acquisition ran.
 */
export interface FenceExcuses {
  /** When a node restarted without persistence (virtual ms). */
  readonly keyLosses: readonly number[];
  /** Whether one node keeps the counters (its fences follow its clock). */
  readonly oneNode: boolean;
  /** When a node's clock jumped back (virtual ms). */
  readonly clockBacks: readonly number[];
}

const NO_EXCUSES: FenceExcuses = { keyLosses: [], oneNode: false, clockBacks: [] };

/**
 * What is wrong with `holdings`: two holders of one lock within their validity, more holders
 * of a semaphore than it has permits, a reader with a writer or two writers, and fencing
 * tokens that do not strictly increase in grant order. Two fenced holdings with a loss of
 * the counters between their grants are not compared, unless {@link FenceExcuses} says the
 * clock makes up for it.
 */
export function violations(
  holdings: readonly Holding[],
  { keyLosses, oneNode, clockBacks }: FenceExcuses = NO_EXCUSES,
): string[] {
  const found: string[] = [];
  const byResource = new Map<string, Holding[]>();
  for (const holding of holdings) {
    if (holding.to <= holding.from) continue; // held for no time at all
    const list = byResource.get(holding.resource) ?? [];
    list.push(holding);
    byResource.set(holding.resource, list);
  }
  for (const [resource, list] of byResource) {
    list.sort((a, b) => a.from - b.from);
    let active: Holding[] = [];
    let lastFenced: Holding | undefined;
    for (const holding of list) {
      active = active.filter((other) => other.to > holding.from);
      const conflicts = active.filter((other) => conflict(holding, other));
      const overflow =
        holding.kind === 'permit' && active.length + 1 > (holding.permits ?? 1)
          ? [`${active.length + 1} holders of ${holding.permits} permits`]
          : [];
      for (const other of conflicts) {
        found.push(
          `${resource}: c${other.client} held ${other.kind} [${span(other)}] while c${holding.client} held ${holding.kind} [${span(holding)}]`,
        );
      }
      for (const what of overflow) {
        found.push(`${resource}: ${what} at ${holding.from.toFixed(3)} (c${holding.client})`);
      }
      active.push(holding);
      if (holding.fence !== undefined) {
        const since = lastFenced?.from ?? Number.POSITIVE_INFINITY;
        const earlier = lastFenced?.fence;
        // A loss at the very moment the earlier grant resolved came after its fence was drawn
        // (the node answered before it): seed 532998500 crashed a node in that millisecond.
        const lost =
          keyLosses.some((at) => at >= since && at < holding.from) &&
          (!oneNode || earlier === undefined || clockBehind(holding, earlier, clockBacks));
        if (!lost && lastFenced && earlier !== undefined && holding.fence <= earlier) {
          found.push(
            `${resource}: fence ${holding.fence} (c${holding.client} at ${holding.from.toFixed(3)}) after fence ${earlier} (c${lastFenced.client} at ${lastFenced.from.toFixed(3)})`,
          );
        }
        lastFenced = holding;
      }
    }
  }
  return found;
}

/**
 * Whether one node's clock may have been at or behind `fence` when it drew `holding`'s fence:
 * it was as the acquisition began, or it jumped back while the acquisition ran, or its
 * reading is unknown.
 */
function clockBehind(holding: Holding, fence: bigint, clockBacks: readonly number[]): boolean {
  const { clockAtStartUs, startedAt } = holding;
  if (clockAtStartUs === undefined || startedAt === undefined) return true;
  return clockAtStartUs <= fence || clockBacks.some((at) => at >= startedAt && at <= holding.from);
}

/** Whether two holdings of one resource may not overlap (permits are counted instead). */
function conflict(a: Holding, b: Holding): boolean {
  if (a.kind === 'lock' || b.kind === 'lock') return true;
  if (a.kind === 'permit' || b.kind === 'permit') return false;
  return a.kind === 'write' || b.kind === 'write';
}

function span(holding: Holding): string {
  return `${holding.from.toFixed(3)}, ${holding.to.toFixed(3)})`;
}

/** One `fencedWrite` as the store ran it: whether it applied the value. */
export interface StoreWrite {
  readonly key: string;
  readonly fence: bigint;
  readonly value: string;
  readonly applied: boolean;
}

/**
 * What is wrong with the writes a fenced store ran, in its order: per key, an applied write
 * whose fence is below one applied before it, or a write turned down although its fence was
 * at least every fence applied before it.
 */
export function storeViolations(writes: readonly StoreWrite[]): string[] {
  const found: string[] = [];
  const highest = new Map<string, bigint>();
  for (const [i, write] of writes.entries()) {
    const seen = highest.get(write.key);
    const stale = seen !== undefined && write.fence < seen;
    if (write.applied && stale) {
      found.push(
        `${write.key}: write ${i} (${write.value}) applied fence ${write.fence} after fence ${seen}`,
      );
    }
    if (!write.applied && !stale) {
      found.push(
        `${write.key}: write ${i} (${write.value}) with fence ${write.fence} turned down, highest ${seen}`,
      );
    }
    if (write.applied) highest.set(write.key, write.fence);
  }
  return found;
}
