import { maskedUrl } from '../config/node-specs.js';
import type { InvalidArgumentError } from '../errors.js';
import type { NodeOptions, NodeOrigin } from './node-options.js';

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
 * names to the options of the subcommand; `nodes[i]` is the i-th node as the command line gave
 * it (`--redis #2`, `--cluster #1`, `$DISTLOCK_REDIS entry 2`: see {@link NodeOrigin}), echoed
 * without its password. An error that already names an option (`--tls-ca`) is returned as it is.
 */
export function inCliTerms(
  error: InvalidArgumentError,
  fields: Readonly<Record<string, CliField>>,
  { origins = [] }: Pick<NodeOptions, 'origins'>,
): UsageError {
  if (error.field.startsWith('--')) return new UsageError(error.message);
  const node = /^nodes\[(\d+)\]$/.exec(error.field);
  const named = (name: string) => (Object.hasOwn(fields, name) ? fields[name] : undefined);
  const nodeName = (index: string) => origins[Number(index)]?.entry ?? `nodes[${index}]`;
  const origin = node?.[1] === undefined ? undefined : origins[Number(node[1])];
  const field =
    node === null
      ? named(error.field)
      : origin && { name: origin.option, given: withoutPassword(origin.given) };
  if (field === undefined) return new UsageError(error.message);
  // The expectation may name other fields: "an integer in [0, lockAtMostFor]".
  const expected = error.expected
    .replace(/\bnodes\[(\d+)\]/g, (_, index: string) => nodeName(index))
    .replace(/\b[a-z]+[A-Z]\w*\b/g, (word) => named(word)?.name ?? word);
  const got = field.given === undefined ? '' : `, got ${field.given}`;
  return new UsageError(`Expected \`${field.name}\` to be ${expected}${got}`);
}

/**
 * `url`, quoted, with its password as `***`, by its text: also a URL that does not parse
 * (the usual reason a node is echoed at all: `redis://u:pw@host:notaport`) or that parses
 * oddly (`u:pw@host`, its scheme forgotten, parses with `u:` as the scheme).
 */
function withoutPassword(url: string): string {
  return JSON.stringify(maskedUrl(url));
}
