import { describe, expect, it } from 'vitest';
import { leaderOf } from '../../src/kinds/election/leader-read.js';

const view = (term: bigint, version: number, value: string) => ({ term, version, value });

describe("an election's leader, from the nodes' views", () => {
  it('is the term a majority of all nodes reports, with its latest value', () => {
    expect(leaderOf([view(4n, 1, 'a'), view(4n, 2, 'a2'), null], 3)).toEqual({
      value: 'a2',
      term: 4n,
    });
    expect(leaderOf([view(4n, 1, 'a')], 1)).toEqual({ value: 'a', term: 4n });
  });

  it('is none when no term has a majority of all nodes', () => {
    expect(leaderOf([view(4n, 1, 'a'), null, null], 3)).toBeNull();
    expect(leaderOf([view(4n, 1, 'a'), view(5n, 1, 'b'), null], 3)).toBeNull();
    expect(leaderOf([view(4n, 1, 'a'), view(4n, 1, 'a'), null, null, null], 5)).toBeNull();
  });

  it('cannot be told when fewer than a majority answered', () => {
    expect(leaderOf([view(4n, 1, 'a'), undefined, undefined], 3)).toBeUndefined();
    expect(leaderOf([undefined], 1)).toBeUndefined();
  });
});
