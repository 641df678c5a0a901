import { describe, expect, it } from 'vitest';
import { checkClock } from '../../src/cli/guardian.js';
import { SAFETY_MARGIN_MS, stopPlan } from '../../src/cli/guardian-plan.js';

const alive = { termSentAt: undefined, distlockGone: false };

describe('stopPlan', () => {
  it('gives the full grace when the lease leaves room for it after three quarters of it', () => {
    const plan = stopPlan({ toldAt: 0, endsAt: 30_000 }, 5_000, { now: 0, ...alive });
    expect(plan).toEqual({ termAt: 30_000 - SAFETY_MARGIN_MS - 5_000, killAt: 29_800 });
  });

  it('never sends SIGTERM before three quarters of the validity told: a healthy distlock extends at half', () => {
    const plan = stopPlan({ toldAt: 0, endsAt: 3_000 }, 30_000, { now: 0, ...alive });
    expect(plan).toEqual({ termAt: 2_250, killAt: 2_800 });
  });

  it('sends SIGTERM at once when distlock is gone, SIGKILL after the grace or before the lease ends', () => {
    const lease = { toldAt: 0, endsAt: 3_000 };
    expect(stopPlan(lease, 500, { now: 1_000, termSentAt: undefined, distlockGone: true })).toEqual(
      { termAt: 1_000, killAt: 1_500 },
    );
    expect(
      stopPlan(lease, 5_000, { now: 1_000, termSentAt: undefined, distlockGone: true }),
    ).toEqual({ termAt: 1_000, killAt: 2_800 });
  });

  it('counts the grace from the SIGTERM sent, and kills at once with no lease told', () => {
    const lease = { toldAt: 0, endsAt: 10_000 };
    expect(stopPlan(lease, 1_000, { now: 9_000, termSentAt: 7_000, distlockGone: false })).toEqual({
      termAt: 7_000,
      killAt: 8_000,
    });
    expect(stopPlan(undefined, 1_000, { now: 5, ...alive })).toEqual({ termAt: 5, killAt: 5 });
  });
});

describe('checkClock', () => {
  it("accepts a reading between distlock's, and says how far apart the clocks may be", () => {
    expect(checkClock(100, 100.4, 100.5)).toBe(2.5);
  });

  it('refuses a reading outside them: the processes do not share the clock', () => {
    expect(checkClock(100, 5_000, 100.5)).toMatch(/do not share a clock/);
    expect(checkClock(100, 90, 100.5)).toMatch(/do not share a clock/);
  });
});
