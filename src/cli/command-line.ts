import { InvalidArgumentError as BadOption, type Command, Option } from 'commander';
import { emitProcessWarning } from '../engine/events.js';
import { InvalidArgumentError } from '../errors.js';
import { Locker } from '../locker.js';
import { formatDuration, parseDuration } from './duration.js';
import { EXIT } from './exit-codes.js';
import { lockerNodes } from './node-clients.js';
import { type NodeOptions, nodeOptions } from './node-options.js';
import { type CliField, inCliTerms, UsageError } from './usage-errors.js';

/** A duration option (a bare number is seconds) whose default shows as written (`30s`). */
export function durationOption(
  flags: string,
  description: string,
  defaultMs: number,
  { zero = false } = {},
): Option {
  const parse = (text: string) => {
    try {
      return parseDuration(text, { zero });
    } catch (error) {
      throw new BadOption((error as Error).message);
    }
  };
  return new Option(flags, description)
    .argParser(parse)
    .default(defaultMs, formatDuration(defaultMs));
}

/** Parses an exit code: an integer from 0 to 255. */
export function exitCode(text: string): number {
  if (!/^\d{1,3}$/.test(text) || Number(text) > 255) {
    throw new BadOption('expected an integer from 0 to 255');
  }
  return Number(text);
}

/**
 * Runs a subcommand's action on the nodes its options name, and sets the exit code it
 * resolves. A bad argument, found by distlock or by the library (then named as the command
 * line names it, through `fields`), is reported like commander's own errors: the message,
 * then this subcommand's usage, and exit 2.
 */
export async function act(
  command: Command,
  fields: Readonly<Record<string, CliField>>,
  action: (nodes: NodeOptions) => Promise<number>,
): Promise<void> {
  let nodes: NodeOptions | undefined;
  try {
    nodes = nodeOptions(command.opts());
    process.exitCode = await action(nodes);
  } catch (error) {
    const usage =
      error instanceof InvalidArgumentError
        ? inCliTerms(error, fields, nodes ?? { nodes: [], from: 'default' })
        : error;
    if (!(usage instanceof UsageError)) throw error;
    command.error(`error: ${usage.message}`, { exitCode: EXIT.usage, code: 'distlock.usage' });
  }
}

/**
 * Runs `use` with a locker on `nodes` (and the key `prefix` if given), and closes it after.
 * `reads`: the command only reads (`status`, `ls`), so the eviction check's warnings, which
 * are about locking on a node, are not printed; every other warning is, as the library prints
 * it.
 */
export async function withLocker<T>(
  nodes: NodeOptions,
  use: (locker: Locker) => Promise<T>,
  {
    prefix,
    restartGraceMs,
    owner,
    reads = false,
  }: {
    prefix?: string;
    restartGraceMs?: number | undefined;
    owner?: string;
    reads?: boolean;
  } = {},
): Promise<T> {
  const given = lockerNodes(nodes);
  let locker: Locker;
  try {
    locker = new Locker({
      nodes: given.nodes,
      // The commands give up on nodes that refuse connections by a rule of their own (at any
      // time, see giveUpWhenDown), and say what to check in terms of their options.
      startupWaitMs: Number.POSITIVE_INFINITY,
      ...(given.tls ? { tls: given.tls } : {}),
      ...(prefix === undefined ? {} : { prefix }),
      ...(restartGraceMs === undefined ? {} : { restartGraceMs }),
      ...(owner === undefined ? {} : { owner }),
    });
  } catch (error) {
    given.close();
    throw error;
  }
  if (reads) {
    locker.events.on('warning', (warning) => {
      if (warning.code !== 'EVICTION_RISK' && warning.code !== 'EVICTION_UNCHECKED') {
        emitProcessWarning(warning);
      }
    });
  }
  try {
    return await use(locker);
  } finally {
    await locker.close();
    given.close();
  }
}
