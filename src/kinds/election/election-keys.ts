import { electionKeys } from '../../keys.js';

/** An election's name and keys (see `electionKeys`). */
export interface ElectionKeys extends ReturnType<typeof electionKeys> {
  readonly name: string;
}

/** The keys of the election `name` under `prefix`. */
export function keysOf(prefix: string, name: string): ElectionKeys {
  return { name, ...electionKeys(prefix, name) };
}
