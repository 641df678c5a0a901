import { MAX_TIMER_MS } from '../config/options.js';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** How durations are written on the command line, for help texts and errors. */
export const DURATION_FORMS = 'seconds (e.g. 5 or 0.5), or 500ms, 30s, 5m, 1h';

/**
 * Parses a duration into ms: a bare number is seconds, as in `flock -w 5` and `sleep 5`
 * (fractions allowed: `0.5`), or a number with `ms`, `s`, `m` or `h`. Throws on anything else,
 * on 0 unless `zero` (then "not at all", as `--wait 0`), and on durations longer than a timer
 * holds (about 24.8 days: a longer `--grace` would fire at once).
 */
export function parseDuration(text: string, { zero = false }: { zero?: boolean } = {}): number {
  const match = /^(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)?$/.exec(text.trim());
  const ms = match ? Math.round(Number(match[1]) * (UNITS[match[2] ?? 's'] ?? 1)) : Number.NaN;
  if (!Number.isSafeInteger(ms)) {
    throw new Error(`invalid duration "${text}" (expected ${DURATION_FORMS})`);
  }
  if (ms === 0 && !zero) {
    throw new Error(`duration "${text}" is not positive (at least 1ms)`);
  }
  if (ms > MAX_TIMER_MS) {
    throw new Error(`duration "${text}" is too long (at most ${MAX_TIMER_MS} ms, about 24.8 days)`);
  }
  return ms;
}

/** `ms` as it would be written on the command line: `20m`, `1.5s`, `250ms`. */
export function formatDuration(ms: number): string {
  for (const unit of ['h', 'm', 's'] as const) {
    const size = UNITS[unit] ?? 1;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return ms >= 1_000 ? `${ms / 1_000}s` : `${ms}ms`;
}

/**
 * `ms` for people, rounded down (never more than is left): `850 ms`, `59.8 s`,
 * `9 min 59.8 s`, `2 h 5 min`.
 */
export function humanDuration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  const tenths = (rest: number) => Math.floor(rest / 100) / 10;
  if (ms < 60_000) return `${tenths(ms)} s`;
  if (ms < 3_600_000) {
    const seconds = tenths(ms % 60_000);
    return `${Math.floor(ms / 60_000)} min${seconds > 0 ? ` ${seconds} s` : ''}`;
  }
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  return `${Math.floor(ms / 3_600_000)} h${minutes > 0 ? ` ${minutes} min` : ''}`;
}
