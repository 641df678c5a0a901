/** Percentile of `values` (nearest rank), 0 for none. */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (values.length === 0) return 0;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Jain's fairness index of per-worker counts: 1 = perfectly even, 1/n = one worker got all. */
export function jain(counts: readonly number[]): number {
  const sum = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 0 : (sum * sum) / (counts.length * squares);
}

/** A monotonic timestamp in ms that is comparable across processes (CLOCK_MONOTONIC). */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
