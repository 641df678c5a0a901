/**
 * When the guardian of a command (guardian-process.ts) stops it, from what distlock last told
 * it: pure, so that the rule reads in one place and is tested on its own.
 */

/** A lease as distlock told it, on the clock both processes share (shared-clock.ts). */
export interface LeaseTold {
  /** When distlock told it. */
  readonly toldAt: number;
  /** When the lease can run out, at the earliest. */
  readonly endsAt: number;
}

/** How long before the lease can run out the guardian's SIGKILL goes, at the latest. */
export const SAFETY_MARGIN_MS = 200;

/**
 * The share of a lease's validity after which a guardian that heard of no newer lease sends
 * SIGTERM. The watchdog extends a lease when half of its validity is left, and distlock
 * tells the guardian as soon as the extension succeeds; an extension that takes longer than
 * the per-node timeout (at most a quarter of the TTL by default, 20 ms for TTLs under 4 s)
 * failed, and distlock then stops the command itself. So a quarter of the validity passes
 * between the moment a healthy distlock extends and this one: never cut off for being slow
 * by less than that.
 */
const QUIET_SHARE = 3 / 4;

/** Where a guarded command stands, as far as the guardian knows. */
export interface GuardianState {
  readonly now: number;
  /** When the guardian sent SIGTERM, if it has. */
  readonly termSentAt: number | undefined;
  /** Whether distlock's pipe closed without `done`: nobody extends the lease any more. */
  readonly distlockGone: boolean;
}

/** When to send SIGTERM and SIGKILL (instants on the shared clock; at once if already past). */
export interface StopPlan {
  readonly termAt: number;
  readonly killAt: number;
}

/**
 * The guardian's rule. SIGKILL goes {@link SAFETY_MARGIN_MS} before the lease can run out, at
 * the latest. SIGTERM goes `graceMs` before that, but not before three quarters of the
 * validity told have passed (see {@link QUIET_SHARE}); at once when distlock is gone. Once
 * SIGTERM went, SIGKILL follows `graceMs` after it, or at the latest as above. With no lease
 * told (distlock died between naming the command and telling its lease), at once.
 */
export function stopPlan(
  lease: LeaseTold | undefined,
  graceMs: number,
  { now, termSentAt, distlockGone }: GuardianState,
): StopPlan {
  if (lease === undefined) return { termAt: now, killAt: now };
  const killBy = lease.endsAt - SAFETY_MARGIN_MS;
  const quietAt = lease.toldAt + (lease.endsAt - lease.toldAt) * QUIET_SHARE;
  const termAt = termSentAt ?? (distlockGone ? now : Math.max(killBy - graceMs, quietAt));
  return { termAt, killAt: Math.min(termAt + graceMs, killBy) };
}
