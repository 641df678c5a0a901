import { MAX_TIMER_MS } from '../options.js';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * Parses `500ms`, `30s`, `5m`, `1h` (or a bare number of ms) into ms; throws on anything
 * else, and on durations longer than a timer holds (about 24.8 days: a longer `--grace`
 * would fire at once).
 */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  const ms = match ? Number(match[1]) * (UNITS[match[2] ?? 'ms'] ?? 1) : Number.NaN;
  if (!Number.isFinite(ms) || ms <= 0 || !Number.isSafeInteger(Math.round(ms))) {
    throw new Error(`invalid duration "${text}" (expected e.g. 500ms, 30s, 5m, 1h)`);
  }
  if (ms > MAX_TIMER_MS) {
    throw new Error(`duration "${text}" is too long (at most ${MAX_TIMER_MS} ms, about 24.8 days)`);
  }
  return Math.round(ms);
}
