/** The oracle of `Election.leader()` (simulation/leader-reads.ts), on histories written by hand. */
import { describe, expect, it } from 'vitest';
import {
  calmReadViolations,
  type LeaderRead,
  leaderReadViolations,
  type Term,
} from '../../simulation/leader-reads.js';

function read(from: number, leader: LeaderRead['leader']): LeaderRead {
  return { client: 1, from, to: from + 5, leader };
}

const resigned: Term = { term: 7n, value: 'c0', resignedAt: 100 };

describe('leader reads', () => {
  it('finds a read begun after the resignation resolved that still names its term', () => {
    const found = leaderReadViolations([read(100, { term: 7n, value: 'c0' })], [resigned]);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('term 7, resigned at 100.000');
  });

  it('lets a read that began before the resignation resolved name it', () => {
    expect(leaderReadViolations([read(99, { term: 7n, value: 'c0' })], [resigned])).toEqual([]);
  });

  it('lets a read name a leader that never resigned, and name nobody', () => {
    const standing: Term = { term: 8n, value: 'c2' };
    const reads = [read(500, { term: 8n, value: 'c2' }), read(500, null)];
    expect(leaderReadViolations(reads, [resigned, standing])).toEqual([]);
  });

  it('lets a read name a term two leaderships share (counters lost) while one stands', () => {
    const again: Term = { term: 7n, value: 'c0' };
    expect(leaderReadViolations([read(200, { term: 7n, value: 'c0' })], [resigned, again])).toEqual(
      [],
    );
  });

  it("finds a term named with another leader's value", () => {
    const found = leaderReadViolations([read(50, { term: 7n, value: 'c3' })], [resigned]);
    expect(found).toEqual([expect.stringContaining('value c3, but its leader is c0')]);
  });

  describe('after a failover that lost the resignation', () => {
    // The replica stopped replicating at 90 and was promoted at 140: 50 ms of writes, the
    // release at 100 among them, were lost. The node sits out reads for 400 ms after that.
    const failovers = [{ lostFrom: 90, promotedAt: 140 }];
    const graceMs = 400;
    const late = [read(600, { term: 7n, value: 'c0' })];

    it('excuses a read after the grace once a clock was set back by more than the failover took', () => {
      const excuses = { failovers, clockJumps: [{ at: 20, backMs: 51 }], graceMs };
      expect(leaderReadViolations(late, [resigned], excuses)).toEqual([]);
    });

    it('finds the read when no clock was set back by more than the failover took', () => {
      const excuses = { failovers, clockJumps: [{ at: 20, backMs: 50 }], graceMs };
      expect(leaderReadViolations(late, [resigned], excuses)).toHaveLength(1);
    });

    it('finds a read during the grace after the promotion, whatever the clocks did', () => {
      const excuses = { failovers, clockJumps: [{ at: 20, backMs: 900 }], graceMs };
      expect(
        leaderReadViolations([read(539, { term: 7n, value: 'c0' })], [resigned], excuses),
      ).toHaveLength(1);
    });

    it('finds the read when the jump came after it, or the failover lost no release', () => {
      const jumpAfter = { failovers, clockJumps: [{ at: 601, backMs: 500 }], graceMs };
      expect(leaderReadViolations(late, [resigned], jumpAfter)).toHaveLength(1);
      const releaseKept = {
        failovers: [{ lostFrom: 101, promotedAt: 140 }],
        clockJumps: [{ at: 20, backMs: 500 }],
        graceMs,
      };
      expect(leaderReadViolations(late, [resigned], releaseKept)).toHaveLength(1);
      const promotedLater = {
        failovers: [{ lostFrom: 90, promotedAt: 601 }],
        clockJumps: [{ at: 20, backMs: 900 }],
        graceMs,
      };
      expect(leaderReadViolations(late, [resigned], promotedLater)).toHaveLength(1);
    });
  });

  it('finds a leader named in the calm, once every leadership ended and its keys were gone', () => {
    const found = calmReadViolations([read(900, { term: 9n, value: 'c1' }), read(900, null)], 900);
    expect(found).toEqual([
      expect.stringContaining('term 9 (c1), though every leadership had ended'),
    ]);
  });

  it('lets a calm read that began before the keys were surely gone name a leader', () => {
    expect(calmReadViolations([read(899, { term: 9n, value: 'c1' })], 900)).toEqual([]);
  });
});
