/** The oracle of the waiting line (simulation/line-order.ts), on histories written by hand. */
import { describe, expect, it } from 'vitest';
import { lineOrderViolations, type Wait } from '../../simulation/line-order.js';
import type { Holding } from '../../simulation/oracle.js';

const bounds = { windowMs: 10, slackMs: 5 };

function wait(order: number, client: number, fields: Partial<Wait> & { fair?: boolean }): Wait {
  return { client, resource: 'r', order, fair: false, deadline: 10_000, ...fields };
}

function holding(client: number, from: number, to: number, releasedAt?: number): Holding {
  return {
    client,
    resource: 'r',
    kind: 'lock',
    from,
    to,
    fence: undefined,
    ...(releasedAt === undefined ? {} : { releasedAt }),
  };
}

describe('fair order', () => {
  const fair = wait(0, 0, { fair: true, refusedAt: 10, grantedAt: 200, endedAt: 200 });

  it('finds a later waiter that took the lock while a fair one waited in line', () => {
    const passer = wait(1, 1, { refusedAt: 20, grantedAt: 100, attempts: 2, endedAt: 100 });
    const found = lineOrderViolations([fair, passer], [], bounds);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('ahead of fair c0');
  });

  it('lets a plain newcomer take a free lock with its first attempt', () => {
    const newcomer = wait(1, 1, { grantedAt: 100, attempts: 1, endedAt: 100 });
    expect(lineOrderViolations([fair, newcomer], [], bounds)).toEqual([]);
  });

  it('holds a fair newcomer to the order even on its first attempt', () => {
    const newcomer = wait(1, 1, { fair: true, grantedAt: 100, attempts: 1, endedAt: 100 });
    expect(lineOrderViolations([fair, newcomer], [], bounds)).toHaveLength(1);
  });

  it('says nothing of waiters the fair one was not ahead of', () => {
    // Joined the line too late for the nodes to know before the take (within the slack).
    const late = { ...fair, refusedAt: 97 };
    const taker = wait(1, 1, { refusedAt: 20, grantedAt: 100, attempts: 2, endedAt: 100 });
    expect(lineOrderViolations([late, taker], [], bounds)).toEqual([]);
    // Gave up before: its wait was over.
    expect(lineOrderViolations([{ ...fair, deadline: 90 }, taker], [], bounds)).toEqual([]);
    // An earlier ticket than the fair waiter's.
    const earlier = wait(-1, 1, { refusedAt: 5, grantedAt: 100, attempts: 2, endedAt: 100 });
    expect(lineOrderViolations([fair, earlier], [], bounds)).toEqual([]);
    // Served first itself.
    const served = { ...fair, grantedAt: 50, endedAt: 50 };
    expect(lineOrderViolations([served, taker], [], bounds)).toEqual([]);
  });
});

describe('bounded barging', () => {
  // c0 is first in line from 100; c1 holds, releases at 105 (within the window: anyone may
  // take it), takes it back and releases again at 130, past the window: that release hands
  // the lock to c0.
  const front = wait(0, 0, { refusedAt: 100, grantedAt: 200, endedAt: 200 });

  it('allows one hold taken within the window, then finds any other before the front', () => {
    const fair = [holding(1, 50, 105, 105), holding(1, 106, 130, 130)];
    expect(lineOrderViolations([front], fair, bounds)).toEqual([]);
    const barged = [...fair, holding(1, 140, 160, 160)];
    const found = lineOrderViolations([front], barged, bounds);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('c1 took the lock at 140.000 while c0 was first in line');
  });

  it('counts only releases that handed over, and only from when the waiter was first', () => {
    // The hold past the window ran out instead of being released: nothing was handed over.
    const expired = [holding(1, 50, 105, 105), holding(1, 106, 130), holding(1, 140, 160)];
    expect(lineOrderViolations([front], expired, bounds)).toEqual([]);
    // An earlier waiter was served at 150: c0 was first only from then.
    const before = wait(-1, 2, { refusedAt: 90, grantedAt: 150, endedAt: 150 });
    const holds = [holding(1, 50, 105, 105), holding(1, 106, 130, 130), holding(2, 150, 160)];
    expect(lineOrderViolations([before, front], holds, bounds)).toEqual([]);
  });
});
