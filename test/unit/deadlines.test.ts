import { createHook } from 'node:async_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { monotonicClock } from '../../src/clock.js';
import { awaitDeadline, type Expiring, roundEnded } from '../../src/quorum/deadlines.js';

/** A round that records when it expired (by the monotonic clock). */
function round(timeoutMs: number): Expiring & { expiredAt?: number } {
  const r = {
    deadline: performance.now() + timeoutMs,
    expiredAt: undefined as number | undefined,
    expire() {
      r.expiredAt = performance.now();
    },
  };
  return r;
}

/** How many Node timers `work` creates. */
async function timersCreatedBy(work: () => Promise<void>): Promise<number> {
  let timers = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'Timeout') timers++;
    },
  });
  hook.enable();
  try {
    await work();
  } finally {
    hook.disable();
  }
  return timers;
}

describe('awaitDeadline', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires each round that did not end, at its deadline, and lets ended ones go', async () => {
    const timeoutMs = 30;
    const rounds = Array.from({ length: 6 }, () => round(timeoutMs));
    const waits = rounds.map((r) => awaitDeadline(r, timeoutMs, monotonicClock, timeoutMs));
    for (const [i, wait] of waits.entries()) if (i % 2 === 0) roundEnded(wait);
    await delay(timeoutMs * 3);
    for (const [i, r] of rounds.entries()) {
      if (i % 2 === 0) expect(r.expiredAt).toBeUndefined();
      else expect(r.expiredAt).toBeGreaterThanOrEqual(r.deadline - 1); // timers fire <1 ms early
    }
  });

  it('arms one timer for many rounds with the same timeout, not one each', async () => {
    const timeoutMs = 40;
    const rounds: ReturnType<typeof round>[] = [];
    const created = await timersCreatedBy(async () => {
      for (let i = 0; i < 100; i++) {
        const r = round(timeoutMs);
        rounds.push(r);
        const wait = awaitDeadline(r, timeoutMs, monotonicClock, timeoutMs);
        roundEnded(wait); // answered at once, as an uncontended request is
      }
    });
    expect(created).toBeLessThanOrEqual(1);
    await delay(timeoutMs * 2);
    expect(rounds.every((r) => r.expiredAt === undefined)).toBe(true);
  });

  it('expires a round put back with an earlier deadline before the later ones', async () => {
    const later = round(200);
    awaitDeadline(later, 60, monotonicClock, 200); // its line's timeout; its own deadline is later
    const sooner = round(20);
    awaitDeadline(sooner, 60, monotonicClock, 20);
    await delay(100);
    expect(sooner.expiredAt).toBeGreaterThanOrEqual(sooner.deadline - 1);
    expect(later.expiredAt).toBeUndefined();
    await delay(150);
    expect(later.expiredAt).toBeGreaterThanOrEqual(later.deadline - 1);
  });

  it('gives each round a timer of its own under fake timers, which then fire it', async () => {
    vi.useFakeTimers();
    const r = round(1_000);
    awaitDeadline(r, 1_000, monotonicClock, 1_000);
    const next = round(1_000);
    awaitDeadline(next, 1_000, monotonicClock, 1_000);
    expect(vi.getTimerCount()).toBe(2); // a shared line would arm one, for the first
    vi.advanceTimersByTime(999);
    expect(r.expiredAt).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(r.expiredAt).toBeDefined();
    expect(next.expiredAt).toBeDefined();
  });
});
