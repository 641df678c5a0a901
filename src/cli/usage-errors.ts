import type { InvalidArgumentError } from '../errors.js';

/**
 * A bad command line, found by distlock rather than commander: printed like commander's
 * own errors, followed by the subcommand's usage, and exit 2.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A library field as the command line spells it, and the value as given there. */
export interface CliField {
  readonly name: string;
  readonly given?: string;
}

/**
 * `error` (the library's, naming fields such as `ttlMs` or `nodes[0]`) in the terms of the
 * command line: ``Expected `--ttl` to be ..., got 1ms``. `fields` maps the library's field
 * names to the options of the subcommand; `nodes` are the node URLs, in order (`nodes[i]` is
 * the i-th `--redis`), echoed without their passwords. An error that already names an option
 * (`--tls-ca`) is returned as it is.
 */
export function inCliTerms(
  error: InvalidArgumentError,
  fields: Readonly<Record<string, CliField>>,
  nodes: readonly string[],
): UsageError {
  if (error.field.startsWith('--')) return new UsageError(error.message);
  const node = /^nodes\[(\d+)\]$/.exec(error.field);
  const named = (name: string) => (Object.hasOwn(fields, name) ? fields[name] : undefined);
  const field =
    node === null
      ? named(error.field)
      : { name: '--redis', given: withoutPassword(nodes[Number(node[1])] ?? '') };
  if (field === undefined) return new UsageError(error.message);
  // The expectation may name other fields: "an integer in [0, lockAtMostFor]".
  const expected = error.expected
    .replace(/\bnodes\[(\d+)\]/g, (_, index: string) => `--redis #${Number(index) + 1}`)
    .replace(/\b[a-z]+[A-Z]\w*\b/g, (word) => named(word)?.name ?? word);
  const got = field.given === undefined ? '' : `, got ${field.given}`;
  return new UsageError(`Expected \`${field.name}\` to be ${expected}${got}`);
}

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return JSON.stringify(url);
    parsed.password = '***';
    return JSON.stringify(parsed.href);
  } catch {
    return JSON.stringify(url);
  }
}
