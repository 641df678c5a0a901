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
  readonly from: number;
  readonly to: number;
  /** The fencing token, for a fenced acquisition. */
  readonly fence: bigint | undefined;
}

/**
 * What is wrong with `holdings`: two holders of one resource within their validity, and
 * fencing tokens that do not strictly increase in grant order. A node restarted without
 * persistence has lost its fence counters, which nothing can restore: two fenced holdings
 * with such a restart between their grants (`keyLosses`, virtual ms) are not compared.
 */
export function violations(
  holdings: readonly Holding[],
  keyLosses: readonly number[] = [],
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
    let latest: Holding | undefined; // the holding that ends last so far
    let lastFenced: Holding | undefined;
    for (const holding of list) {
      if (latest && latest.to > holding.from) {
        found.push(
          `${resource}: c${latest.client} held [${span(latest)}] while c${holding.client} held [${span(holding)}]`,
        );
      }
      if (!latest || holding.to > latest.to) latest = holding;
      if (holding.fence !== undefined) {
        const since = lastFenced?.from ?? Number.POSITIVE_INFINITY;
        const lost = keyLosses.some((at) => at > since && at < holding.from);
        if (!lost && lastFenced?.fence !== undefined && holding.fence <= lastFenced.fence) {
          found.push(
            `${resource}: fence ${holding.fence} (c${holding.client} at ${holding.from.toFixed(3)}) after fence ${lastFenced.fence} (c${lastFenced.client} at ${lastFenced.from.toFixed(3)})`,
          );
        }
        lastFenced = holding;
      }
    }
  }
  return found;
}

function span(holding: Holding): string {
  return `${holding.from.toFixed(3)}, ${holding.to.toFixed(3)})`;
}
