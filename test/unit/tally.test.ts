import { describe, expect, it } from 'vitest';
import { defaultNodeTimeoutMs } from '../../src/config/options.js';
import { quorumOf, verdictOf } from '../../src/quorum/tally.js';
import { driftMs, validityMs } from '../../src/quorum/validity.js';

describe('quorum', () => {
  it('is a strict majority', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4, 4]);
  });

  it('decides as soon as the outcome is certain', () => {
    expect(verdictOf(3, 0, 5)).toBe('quorum');
    expect(verdictOf(2, 2, 5)).toBe('open');
    expect(verdictOf(2, 3, 5)).toBe('no-quorum');
    expect(verdictOf(0, 1, 1)).toBe('no-quorum');
    expect(verdictOf(1, 0, 1)).toBe('quorum');
    expect(verdictOf(1, 1, 2)).toBe('no-quorum');
  });
});

describe('validity', () => {
  it('subtracts elapsed time and drift from the TTL', () => {
    expect(driftMs(10_000, 0.01)).toBe(102);
    expect(validityMs(10_000, 1_000, 1_050, 0.01)).toBe(10_000 - 50 - 102);
    expect(validityMs(300, 0, 500, 0.01)).toBeLessThan(0);
  });

  it('derives the node timeout from the TTL within bounds', () => {
    expect(defaultNodeTimeoutMs(10_000)).toBe(50);
    expect(defaultNodeTimeoutMs(1_000)).toBe(20);
    expect(defaultNodeTimeoutMs(600_000)).toBe(500);
    expect(defaultNodeTimeoutMs(30)).toBe(15);
    expect(defaultNodeTimeoutMs(3)).toBe(1);
  });
});
