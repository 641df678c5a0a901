import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import {
  electionKeys,
  fenceKey,
  lockKey,
  mutexLineKeys,
  permitKey,
  readWriteKey,
  readWriteKeys,
} from '../../src/keys.js';

/** Every key a hold of each kind on `name` may touch, by kind. */
function keysOf(prefix: string, name: string): Record<string, string[]> {
  const lock = lockKey(prefix, name);
  const permits = permitKey(prefix, name);
  const readWrite = readWriteKey(prefix, name);
  const election = electionKeys(prefix, name);
  return {
    lock: [...mutexLineKeys(lock), fenceKey(lock)],
    semaphore: mutexLineKeys(permits),
    readWrite: [readWrite, ...Object.values(readWriteKeys(readWrite))],
    election: [...mutexLineKeys(election.lock), fenceKey(election.lock), election.leader],
  };
}

/** The hash tag Redis Cluster hashes `key` by: from the first `{` to the next `}`, if not empty. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** Every string of 1 to `length` characters of `alphabet`. */
function allStrings(alphabet: readonly string[], length: number): string[] {
  let level = [''];
  const all: string[] = [];
  for (let i = 0; i < length; i++) {
    level = level.flatMap((head) => alphabet.map((c) => head + c));
    all.push(...level);
  }
  return all;
}

/** `count` names of 1 to 6 pieces, drawn from `pieces` by a fixed-seed generator (mulberry32). */
function drawnNames(pieces: readonly string[], count: number): string[] {
  let seed = 42;
  const next = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  return Array.from({ length: count }, () =>
    Array.from({ length: 1 + next(6) }, () => pieces[next(pieces.length)]).join(''),
  );
}

// Braces, the separator, the suffixes' words, hex digits and characters of 2 to 4 UTF-8 bytes.
const PIECES = ['}', '{', ':', 'a', '7d', 'queue', 'permits', 'rw', 'election', 'fence', 'é', '🔒'];
const DRAWN = drawnNames(PIECES, 3_000);
const NAMES = [
  ...new Set([...allStrings(['}', '{', ':', 'a'], 4), ...DRAWN, ...DRAWN.map((n) => `}${n}`)]),
];
const PREFIXES = ['distlock:', '', 'd', 'distlock'];

describe('key layout', () => {
  it('keeps the keys of names that do not begin with `}`', () => {
    expect(lockKey('distlock:', 'r')).toBe('distlock:{r}');
    expect(lockKey('distlock:', 'a}b')).toBe('distlock:{a}b}');
    expect(permitKey('distlock:', '{x')).toBe('distlock:{{x}:permits');
  });

  it('hex-encodes a name that begins with `}` after `<prefix>}`', () => {
    expect(lockKey('distlock:', '}x')).toBe('distlock:}{7d78}');
    expect(lockKey('distlock:', '}')).toBe('distlock:}{7d}');
    expect(fenceKey(lockKey('app:', '}é'))).toBe('app:}{7dc3a9}:fence');
  });

  it('puts every key of a name under one non-empty hash tag, so in one Cluster slot', () => {
    const split = NAMES.filter((name) => {
      const keys = Object.values(keysOf('distlock:', name)).flat();
      const tags = new Set(keys.map(hashTag));
      const slots = new Set(keys.map((key) => calculateSlot(key)));
      return tags.size !== 1 || tags.has(undefined) || slots.size !== 1;
    });
    expect(split).toEqual([]);
  });

  it('never gives one key to two holds: names, kinds and prefixes apart', () => {
    // Each (prefix, name, kind, role) is met once: a key met twice is shared.
    const keys = PREFIXES.flatMap((prefix) =>
      NAMES.flatMap((name) => Object.values(keysOf(prefix, name)).flat()),
    );
    const seen = new Set<string>();
    const shared = keys.filter((key) => seen.has(key) || !seen.add(key));
    expect(shared).toEqual([]);
    expect(keys.length).toBeGreaterThan(400_000);
    expect(NAMES.filter((name) => name.startsWith('}')).length).toBeGreaterThan(2_000);
  });
});
