import { InvalidArgumentError } from '../errors.js';
import { namesOf, rejectUnknownOptions } from './option-names.js';
import { validateDuration } from './options.js';

/** Options of `Locker.inspect`. */
export interface InspectOptions {
  /**
   * How long each node gets to answer, connecting included (ms): a node silent for longer is
   * reported as unreachable, not waited for. Minimum 1. @default 2_000
   */
  timeoutMs?: number;
}

/** Options of `Locker.list`. */
export interface ListOptions extends InspectOptions {
  /**
   * Which names to list: a glob (`*` any run, `?` one character, `[abc]` one of, `\` quotes
   * the next), as Redis's `MATCH` reads one. @default '*'
   */
  match?: string;
}

/** Options of `Locker.forceRelease`. */
export type ForceReleaseOptions = InspectOptions;

/** The per-node timeout of an inspection or a forced release, unless told. */
export const INSPECT_TIMEOUT_MS = 2_000;

/** Validates the options of `method` (`inspect`, `forceRelease`): its per-node timeout. */
export function operatorTimeout(options: unknown, method: string): number {
  if (options === undefined) return INSPECT_TIMEOUT_MS;
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, namesOf<InspectOptions>({ timeoutMs: true }), method);
  const { timeoutMs = INSPECT_TIMEOUT_MS } = options as InspectOptions;
  validateDuration('timeoutMs', timeoutMs);
  return timeoutMs;
}

/** Validates the options of `Locker.list`: a name pattern and the per-node timeout. */
export function listOptions(options: unknown): { match: string | undefined; timeoutMs: number } {
  if (options === undefined) return { match: undefined, timeoutMs: INSPECT_TIMEOUT_MS };
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, namesOf<ListOptions>({ timeoutMs: true, match: true }), 'list');
  const { match, timeoutMs = INSPECT_TIMEOUT_MS } = options as ListOptions;
  if (match !== undefined && (typeof match !== 'string' || match.length === 0)) {
    throw new InvalidArgumentError('match', 'a non-empty glob, such as `report:*`', match);
  }
  validateDuration('timeoutMs', timeoutMs);
  return { match, timeoutMs };
}
