/**
 * Redis key layout. Every key of one resource shares the hash tag `{resource}`, so
 * multi-key scripts for that resource stay in one Redis Cluster slot. Redis takes the tag up
 * to the first `}`; a resource that itself contains `}` still gets one consistent tag for all
 * its keys, because every suffix is appended after the tag.
 */
export function lockKey(prefix: string, resource: string): string {
  return `${prefix}{${resource}}`;
}

/** The pub/sub channel on which releases of the lock at `key` are announced. */
export function releaseChannel(key: string): string {
  return `${key}:released`;
}

/**
 * The channel on which a fair waiter holding `ticket` hears that it is first in line and the
 * lock is free. Redis names the ticket (a sorted-set score) with "%.17g", which for these
 * integers below 2^53 is the plain decimal that `String` gives too.
 */
export function turnChannel(key: string, ticket: number): string {
  return `${releaseChannel(key)}:${ticket}`;
}

/** Keys of the waiting line of fair acquisition, next to the lock at `key` (same hash tag). */
export function queueKeys(key: string): { queue: string; deadlines: string } {
  return { queue: `${key}:queue`, deadlines: `${key}:queue-deadlines` };
}

/** The fence counter of the lock at `key`: never expires, only grows. */
export function fenceKey(key: string): string {
  return `${key}:fence`;
}
