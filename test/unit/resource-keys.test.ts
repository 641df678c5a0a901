import { describe, expect, it } from 'vitest';
import { formatListing } from '../../src/cli/list-command.js';
import { nameMatcher, resourceOf } from '../../src/inventory/resource-keys.js';
import {
  electionKeys,
  lockKey,
  permitKey,
  queueKeys,
  readWriteKey,
  readWriteKeys,
} from '../../src/keys.js';

describe('the resource a key belongs to', () => {
  it('reads every kind back from the key layout, names with braces and colons included', () => {
    const p = 'distlock:';
    for (const name of ['report', 'a:b', 'x}y', '}leading', '{odd', 'ü 😀']) {
      const lock = lockKey(p, name);
      expect(resourceOf(p, lock)).toEqual({ kind: 'lock', name });
      expect(resourceOf(p, `${lock}:fence`)).toEqual({ kind: 'lock', name });
      expect(resourceOf(p, queueKeys(lock).deadlines)).toEqual({ kind: 'lock', name });
      expect(resourceOf(p, permitKey(p, name))).toEqual({ kind: 'semaphore', name });
      expect(resourceOf(p, queueKeys(permitKey(p, name)).queue)).toEqual({
        kind: 'semaphore',
        name,
      });
      const rw = readWriteKeys(readWriteKey(p, name));
      for (const key of [rw.writer, rw.readers, rw.deadlines, rw.waitingWriters]) {
        expect(resourceOf(p, key)).toEqual({ kind: 'read-write', name });
      }
      const election = electionKeys(p, name);
      for (const key of [
        election.lock,
        election.leader,
        election.changes,
        `${election.lock}:fence`,
      ]) {
        expect(resourceOf(p, key)).toEqual({ kind: 'election', name });
      }
    }
    expect(resourceOf(p, lockKey(p, 'schedule:nightly'))).toEqual({
      kind: 'tick',
      name: 'nightly',
    });
    // Not a resource's: the lease record, another prefix, an unknown suffix.
    expect(resourceOf(p, `${p}longest-lease`)).toBeUndefined();
    expect(resourceOf(p, 'other:{report}')).toBeUndefined();
    expect(resourceOf(p, `${lockKey(p, 'report')}:mine`)).toBeUndefined();
  });

  it('matches names by glob, as Redis MATCH does', () => {
    const matches = (pattern: string, name: string) => nameMatcher(pattern)(name);
    expect(matches('report:*', 'report:1')).toBe(true);
    expect(matches('report:*', 'reports')).toBe(false);
    expect(matches('r?p', 'rap')).toBe(true);
    expect(matches('[ab]x', 'bx')).toBe(true);
    expect(matches('[^ab]x', 'bx')).toBe(false);
    expect(matches('a\\*', 'a*')).toBe(true);
    expect(matches('a\\*', 'ab')).toBe(false);
    expect(matches('a.b', 'axb')).toBe(false); // only glob characters are special
    expect(nameMatcher(undefined)('anything')).toBe(true);
  });

  it('lists within a screen: what does not fit is counted', () => {
    const item = (name: string) => ({
      kind: 'lock' as const,
      name,
      held: true,
      holders: 1,
      owners: ['w\\n1'],
      since: null,
      remainingMs: 5,
      fence: null,
      waiters: 0,
      unreachable: [],
    });
    const all = ['a', 'b', 'c', 'd'].map(item);
    expect(formatListing(all)).toHaveLength(5);
    expect(formatListing(all, 4)).toEqual([
      'lock a  held by w\\\\n1, 5 ms left',
      'lock b  held by w\\\\n1, 5 ms left',
      '... 2 more',
      '4 held or waited for',
    ]);
  });
});
