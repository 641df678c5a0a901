/**
 * What a key under a locker's prefix belongs to: a resource's name and kind, read back from
 * the key layout of `keys.ts` (`<prefix>{<name>}<suffix>`, or `<prefix>}{<hex>}<suffix>` for
 * a name that begins with `}`).
 */
import { TICK_PREFIX } from '../keys.js';

/** The kinds of resources `Locker.list` reports. A tick is a `schedule()` job's lock. */
export type ResourceKind = 'lock' | 'tick' | 'semaphore' | 'read-write' | 'election';

/** A resource a key belongs to. */
export interface ResourceRef {
  readonly kind: ResourceKind;
  /** The name it was made with (`acquire`'s resource, the semaphore's name...). */
  readonly name: string;
}

/** The suffixes after `<prefix>{<name>}`, by kind; the longest first, so that each matches once. */
const SUFFIXES: readonly (readonly [RegExp, ResourceKind])[] = [
  [/^:permits(?::queue(?:-[a-z]+)?)?$/, 'semaphore'],
  [/^:rw(?::writer|:readers|:queue(?:-[a-z]+)?)$/, 'read-write'],
  [/^:election(?::leader|:changes|:fence|:queue(?:-[a-z]+)?)?$/, 'election'],
  [/^(?::fence|:queue(?:-[a-z]+)?)?$/, 'lock'],
];

/** The resource `key` belongs to under `prefix`, or `undefined` for any other key. */
export function resourceOf(prefix: string, key: string): ResourceRef | undefined {
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  let name: string;
  let suffix: string;
  if (rest.startsWith('{')) {
    const end = rest.lastIndexOf('}');
    if (end < 1) return undefined;
    name = rest.slice(1, end);
    suffix = rest.slice(end + 1);
  } else if (rest.startsWith('}{')) {
    const end = rest.indexOf('}', 2);
    const hex = rest.slice(2, end);
    if (end < 0 || !/^(?:[0-9a-f]{2})+$/.test(hex)) return undefined;
    name = Buffer.from(hex, 'hex').toString();
    suffix = rest.slice(end + 1);
  } else {
    return undefined;
  }
  const kind = SUFFIXES.find(([pattern]) => pattern.test(suffix))?.[1];
  if (kind === undefined || name === '') return undefined;
  if (kind === 'lock' && name.startsWith(TICK_PREFIX))
    return { kind: 'tick', name: name.slice(TICK_PREFIX.length) };
  return { kind, name };
}

/**
 * A test for resource names against a glob (`*` any run, `?` one character, `[abc]` one of,
 * `\` quotes), as Redis's MATCH reads one; `undefined` matches every name.
 */
export function nameMatcher(pattern: string | undefined): (name: string) => boolean {
  if (pattern === undefined || pattern === '*') return () => true;
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern[++i] as string);
    else if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) source += '\\[';
      else {
        const inner = pattern.slice(i + 1, end).replace(/[\\\]]/g, '\\$&');
        source += inner.startsWith('^') ? `[^${inner.slice(1)}]` : `[${inner}]`;
        i = end;
      }
    } else source += escapeRegExp(c);
  }
  const matcher = new RegExp(`^${source}$`, 's');
  return (name) => matcher.test(name);
}

const escapeRegExp = (c: string) => c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
