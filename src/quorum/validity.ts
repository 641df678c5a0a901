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
