import { InvalidArgumentError } from '../errors.js';

/**
 * Names that users of other lock libraries (or of ioredis) bring along, and what distlock
 * calls the same thing: node-redlock's `retryCount`, redis-semaphore's `lockTimeout`,
 * Redisson's `leaseTime`. Suggested only where an option object has the target.
 */
const FAMILIAR_NAMES: Readonly<Record<string, string>> = {
  acquireTimeout: 'waitMs',
  clients: 'nodes',
  duration: 'ttlMs',
  expiry: 'ttlMs',
  fence: 'fencing',
  fenced: 'fencing',
  keyPrefix: 'prefix',
  leaseTime: 'ttlMs',
  lockTimeout: 'ttlMs',
  maxRetries: 'waitMs',
  retries: 'waitMs',
  retryCount: 'waitMs',
  retryInterval: 'retryDelayMs',
  retryJitter: 'retryDelayMs',
  servers: 'nodes',
  timeout: 'waitMs',
  urls: 'nodes',
};

/**
 * The keys of an options type, from an object that must list each of them exactly once:
 * `namesOf<LockerOptions>({ nodes: true, ... })`. `T` must be given: it is not inferred, and
 * its default makes a call without it fail to compile.
 */
export function namesOf<T = { 'namesOf needs its options type': never }>(
  names: Record<keyof NoInfer<T>, true>,
): readonly string[] {
  return Object.keys(names);
}

/** Where else a name may belong: a user may give an option to the wrong call. */
export interface OtherOptions {
  /** The call that takes them, for the message (`acquire`). */
  readonly owner: string;
  /** Its option names. */
  readonly names: readonly string[];
}

/**
 * Throws an `InvalidArgumentError` for the first own key of `options` that is not in `known`,
 * naming it and suggesting the closest known name (or one of `other`'s, saying where it
 * belongs): a misspelled option would otherwise be silently ignored (`ttl: 5` instead of
 * `ttlMs`, and the default applies). The value is not shown: it may be a secret.
 *
 * @param owner what the options belong to, for the message (`acquire`, `new Locker()`)
 * @param path prefix of the reported field, for nested options (`tls.`)
 */
export function rejectUnknownOptions(
  options: object,
  known: readonly string[],
  owner: string,
  { path = '', other }: { path?: string; other?: OtherOptions } = {},
): void {
  // for-in, not Object.entries: this runs on every acquire, and must not allocate.
  for (const name in options) {
    if (known.includes(name) || !Object.hasOwn(options, name)) continue;
    const value: unknown = (options as Record<string, unknown>)[name];
    const closest = closestName(name, known, other?.names);
    let hint = '';
    if (closest !== undefined && known.includes(closest)) {
      hint = `; did you mean \`${path}${closest}\`?`;
    } else if (closest !== undefined && other !== undefined) {
      hint = `; \`${closest}\` is an option of ${other.owner}`;
    }
    const expected = `absent (not an option of ${owner}${hint})`;
    throw new InvalidArgumentError(`${path}${name}`, expected, value, { hideValue: true });
  }
}

/**
 * The name `name` most likely stands for, in this order: a familiar name from another
 * library among `known`; a name of `known` that starts with it, contains it or is contained
 * in it (`ttl` → `ttlMs`, `timeout` → `nodeTimeoutMs`, `keyprefix` → `prefix`); the same two
 * among `other`; else the nearest of all by edit distance, ignoring case, when it is within a
 * third of the name's length (at least 2) and less than the typed name's length.
 */
export function closestName(
  name: string,
  known: readonly string[],
  other: readonly string[] = [],
): string | undefined {
  return (
    familiar(name, known) ??
    nearest(name, known, true) ??
    familiar(name, other) ??
    nearest(name, [...known, ...other], false)
  );
}

function familiar(name: string, names: readonly string[]): string | undefined {
  const meant = FAMILIAR_NAMES[name];
  return meant !== undefined && names.includes(meant) ? meant : undefined;
}

/** The best of `names` for `name`: parts first; with `partsOnly`, nothing else. */
function nearest(name: string, names: readonly string[], partsOnly: boolean): string | undefined {
  const typed = name.toLowerCase();
  let best: { name: string; score: number } | undefined;
  for (const candidate of names) {
    const lower = candidate.toLowerCase();
    const distance = editDistance(typed, lower);
    const part =
      (typed.length >= 2 && lower.startsWith(typed)) ||
      (typed.length >= 4 && lower.includes(typed)) ||
      (lower.length >= 4 && typed.includes(lower));
    const near =
      distance <= Math.max(2, Math.floor(candidate.length / 3)) && distance < typed.length;
    if (!part && (partsOnly || !near)) continue;
    const score = part ? distance - 100 : distance; // a part beats any near miss
    if (best === undefined || score < best.score) best = { name: candidate, score };
  }
  return best?.name;
}

/**
 * Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`: the
 * optimal string alignment distance. A few lines, so not worth a runtime dependency that
 * every service using distlock would install.
 */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (before[j - 2] as number) + 1);
      }
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] as number;
}
