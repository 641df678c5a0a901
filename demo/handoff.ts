import type { Holding } from '../src/testing/index.js';

/** One bar of the hand-off latency histogram: gaps in `[fromMs, toMs)`. */
export interface HandOffBin {
  readonly fromMs: number;
  readonly toMs: number;
  readonly count: number;
}

/** Hand-off latencies of a run, as the summary and the report show them. */
export interface HandOffStats {
  /** Hand-offs: pairs of consecutive holdings. */
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Hand-offs where the next holder acquired before the previous one released (overlaps). */
  readonly negative: number;
  /** Non-negative gaps in bins with edges 0, 0.5, 1, 1.5, 2, 3, 4, 6, 8, 12 ... ms. */
  readonly bins: readonly HandOffBin[];
}

/**
 * Gaps between one release and the next acquisition, in acquisition order: how long the lock
 * stayed free before the next holder had it. A negative gap is an overlap.
 */
export function handOffGaps(holdings: readonly Holding[]): number[] {
  const sorted = [...holdings].sort((a, b) => a.acquiredAt - b.acquiredAt);
  return sorted.slice(1).map((h, i) => h.acquiredAt - (sorted[i] as Holding).releasedAt);
}

/** The `p`th percentile (nearest rank) of `values`, 0 for none. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Percentiles and histogram of the hand-off gaps of `holdings`. */
export function handOffStats(holdings: readonly Holding[]): HandOffStats {
  const gaps = handOffGaps(holdings);
  const positive = gaps.filter((g) => g >= 0);
  const maxMs = Math.max(0, ...gaps);
  const edges = binEdges(maxMs);
  const bins = edges.slice(0, -1).map((fromMs, i) => {
    const toMs = edges[i + 1] as number;
    const count = positive.filter((g) => g >= fromMs && g < toMs).length;
    return { fromMs, toMs, count };
  });
  return {
    count: gaps.length,
    p50Ms: percentile(gaps, 50),
    p99Ms: percentile(gaps, 99),
    maxMs,
    negative: gaps.length - positive.length,
    bins,
  };
}

/** 0, 0.5, 1, 1.5, 2, 3, 4, 6, 8, 12 ... up to the first edge above `maxMs`. */
function binEdges(maxMs: number): number[] {
  const edges = [0, 0.5];
  for (let octave = 1; (edges.at(-1) as number) <= maxMs; octave *= 2) {
    edges.push(octave * 1, octave * 1.5);
  }
  // The loop adds two edges at a time: drop the second if the first already covers maxMs.
  if ((edges.at(-2) as number) > maxMs) edges.pop();
  return edges;
}
