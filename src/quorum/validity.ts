/**
 * Clock-drift allowance for a lease of `ttlMs`: `ttlMs * driftFactor + 2` ms, the 2 ms
 * covering the millisecond granularity of Redis expiry on both ends.
 */
export function driftMs(ttlMs: number, driftFactor: number): number {
  return ttlMs * driftFactor + 2;
}

/**
 * How long a lease that was requested at `startedAt` can still be trusted at `now`:
 * `ttl - elapsed - drift`. Elapsed time counts from before the first request was sent, so
 * slow replies shrink the validity; a result <= 0 means the lease must not be used.
 */
export function validityMs(
  ttlMs: number,
  startedAt: number,
  now: number,
  driftFactor: number,
): number {
  return ttlMs - (now - startedAt) - driftMs(ttlMs, driftFactor);
}

/**
 * Per-node timeout used when the caller sets none: 1/200 of the TTL (50 ms for a 10 s lease,
 * the upper end of the Redlock paper's 5–50 ms), at least 20 ms so that a garbage-collection
 * pause does not fail healthy nodes, at most 500 ms, and never more than half the TTL.
 */
export function defaultNodeTimeoutMs(ttlMs: number): number {
  return Math.max(1, Math.min(Math.max(Math.round(ttlMs / 200), 20), 500, Math.floor(ttlMs / 2)));
}
