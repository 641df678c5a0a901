import { InvalidArgumentError } from './errors.js';

/**
 * Names that users of other lock libraries bring along, and what distlock calls the same
 * thing (node-redlock's `retryCount`, redis-semaphore's `lockTimeout`, Redisson's
 * `leaseTime`). Suggested only where the option object has the target.
 */
const FAMILIAR_NAMES: Readonly<Record<string, string>> = {
  acquireTimeout: 'waitMs',
  clients: 'nodes',
  duration: 'ttlMs',
  expiry: 'ttlMs',
  leaseTime: 'ttlMs',
  lockTimeout: 'ttlMs',
  retryCount: 'waitMs',
  retryInterval: 'retryDelayMs',
  retryJitter: 'retryDelayMs',
  servers: 'nodes',
  urls: 'nodes',
};

/** The keys of an options type, from an object that must list each of them exactly once. */
export function namesOf<T>(names: Record<keyof T, true>): readonly string[] {
  return Object.keys(names);
}

/** Where else a name may belong: a user may give an option to the wrong call. */
export interface OtherOptions {
  /** The call that takes them, for the message (`acquire`). */
  readonly owner: string;
  readonly names: readonly string[];
}

/**
 * Throws an `InvalidArgumentError` for the first own key of `options` that is not in `known`,
 * naming it and suggesting the closest known name (or one of `other`'s, saying where it
 * belongs): a misspelled option would otherwise be silently ignored (`ttl: 5` instead of
 * `ttlMs`, and the default applies).
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
  for (const [name, value] of Object.entries(options)) {
    if (known.includes(name)) continue;
    const closest = closestName(name, [...known, ...(other?.names ?? [])]);
    let hint = '';
    if (closest !== undefined && known.includes(closest)) {
      hint = `; did you mean \`${path}${closest}\`?`;
    } else if (closest !== undefined && other !== undefined) {
      hint = `; \`${closest}\` is an option of ${other.owner}`;
    }
    throw new InvalidArgumentError(
      `${path}${name}`,
      `absent (not an option of ${owner}${hint})`,
      value,
    );
  }
}

/**
 * The known name `name` most likely stands for: a familiar name from another library; else a
 * known name that starts with it (`ttl` → `ttlMs`: a unit left out) or contains it
 * (`timeout` → `nodeTimeoutMs`); else the nearest by edit distance (ignoring case), within a
 * third of its length and at least 2.
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const familiar = FAMILIAR_NAMES[name];
  if (familiar !== undefined && known.includes(familiar)) return familiar;
  const typed = name.toLowerCase();
  let best: { name: string; score: number } | undefined;
  for (const candidate of known) {
    const lower = candidate.toLowerCase();
    const distance = editDistance(typed, lower);
    const near = distance <= Math.max(2, Math.floor(candidate.length / 3));
    const part = typed.length >= 2 && lower.startsWith(typed);
    const inside = typed.length >= 4 && lower.includes(typed);
    // Names that start with or contain what was typed come before any others.
    const score = part || inside ? distance - 100 : distance;
    if ((near || part || inside) && (best === undefined || score < best.score)) {
      best = { name: candidate, score };
    }
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
