import { describe, expect, it } from 'vitest';
import { checkHistory, type Holding, type Write } from '../../src/testing/index.js';

const hold = (worker: string, acquiredAt: number, releasedAt: number, fence?: string): Holding => ({
  type: 'holding',
  worker,
  resource: 'r',
  acquiredAt,
  releasedAt,
  ...(fence ? { fence } : {}),
});
const write = (
  at: number,
  value: number,
  fence?: string,
  outcome: Write['outcome'] = 'applied',
): Write => ({
  type: 'write',
  worker: 'w',
  resource: 'r',
  at,
  value,
  outcome,
  ...(fence ? { fence } : {}),
});

describe('checkHistory', () => {
  it('passes a clean history', () => {
    const report = checkHistory(
      [hold('a', 0, 10, '1'), hold('b', 11, 20, '2'), write(5, 1, '1'), write(15, 2, '2')],
      new Map([['r', 2]]),
    );
    expect(report.ok).toBe(true);
    expect([report.holdings, report.writes, report.appliedWrites]).toEqual([2, 2, 2]);
  });

  it('finds overlapping holdings, also behind a long one', () => {
    const report = checkHistory(
      [hold('a', 0, 100), hold('b', 10, 20), hold('c', 50, 60), hold('d', 100, 110)],
      new Map(),
    );
    expect(report.overlaps.map((o) => [o.first.worker, o.second.worker])).toEqual([
      ['a', 'b'],
      ['a', 'c'],
    ]);
    expect(report.ok).toBe(false);
  });

  it('finds fenced writes applied out of order, and ignores refused ones', () => {
    const report = checkHistory(
      [write(1, 1, '5'), write(2, 2, '4', 'stale'), write(3, 2, '3'), write(4, 3, '10')],
      new Map([['r', 3]]),
    );
    expect(report.fencesOutOfOrder).toHaveLength(1);
    expect(report.fencesOutOfOrder[0]?.later.fence).toBe('3');
  });

  it('orders writes as the store applied them, not by when their writers heard back', () => {
    // The first write's writer was paused before it noted the store's answer (as in the fault
    // suite's 'pause worker past TTL'): it notes it after the second write.
    const report = checkHistory([write(10, 1, '5'), write(5, 2, '6')], new Map([['r', 2]]));
    expect(report.fencesOutOfOrder).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('finds lost acknowledged writes and leftover keys', () => {
    const report = checkHistory([write(1, 1), write(2, 1)], new Map([['r', 1]]), ['distlock:{r}']);
    expect(report.lostWrites).toEqual([{ resource: 'r', expected: 2, final: 1 }]);
    expect(report.leftoverKeys).toEqual(['distlock:{r}']);
  });
});

describe('checkHistory with shared holdings', () => {
  const shared = (
    worker: string,
    mode: 'read' | 'write' | 'permit',
    acquiredAt: number,
    releasedAt: number,
  ): Holding => ({
    type: 'holding',
    worker,
    resource: 'r',
    mode,
    acquiredAt,
    releasedAt,
    ...(mode === 'permit' ? { permits: 2 } : {}),
  });

  it('lets readers overlap, but not a writer with a reader or another writer', () => {
    const report = checkHistory(
      [
        shared('r1', 'read', 0, 50),
        shared('r2', 'read', 10, 60),
        shared('w1', 'write', 55, 70), // while r2 reads
        shared('w2', 'write', 70, 80),
        shared('r3', 'read', 75, 90), // while w2 writes
      ],
      new Map(),
    );
    expect(report.overlaps.map((o) => [o.first.worker, o.second.worker])).toEqual([
      ['r2', 'w1'],
      ['w2', 'r3'],
    ]);
  });

  it('counts permits: two of two at once pass, a third at the same instant does not', () => {
    const ok = checkHistory(
      [shared('a', 'permit', 0, 50), shared('b', 'permit', 10, 60), shared('c', 'permit', 50, 70)],
      new Map(),
    );
    expect(ok.ok).toBe(true);
    const excess = checkHistory(
      [shared('a', 'permit', 0, 50), shared('b', 'permit', 10, 60), shared('c', 'permit', 40, 70)],
      new Map(),
    );
    expect(excess.excessHolders).toEqual([{ resource: 'r', at: 40, holders: 3, permits: 2 }]);
    expect(excess.overlaps).toEqual([]);
    expect(excess.ok).toBe(false);
  });
});
