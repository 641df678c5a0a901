/**
 * How a command of the simulated node is declared: its name, its arity as Redis's command
 * table gives it (the name counts; negative: at least that many), and what it does.
 */
import type { Keyspace } from '../keyspace.js';
import { fitsLongLong, parseLongLong } from '../numbers.js';
import { NOT_INTEGER, type Reply, ReplyError } from '../reply.js';

/** What a command may use of its node. */
export interface CommandContext {
  readonly keyspace: Keyspace;
  /** The node's clock, in ms and in µs since the epoch. */
  readonly nowMs: () => bigint;
  readonly nowUs: () => bigint;
  /** Set while a script runs this command. */
  readonly inScript: boolean;
}

export interface Command<Context extends CommandContext = CommandContext> {
  /** Lower case, as Redis names it in errors. */
  readonly name: string;
  readonly arity: number;
  /** Redis refuses it inside a script (`CMD_NOSCRIPT`). */
  readonly noScript?: boolean;
  /** `args`: the arguments after the command name (byte strings). */
  readonly run: (context: Context, args: readonly string[]) => Reply;
}

/** Whether `argc` (the name included) satisfies `arity`. */
export function arityAllows(arity: number, argc: number): boolean {
  return arity >= 0 ? argc === arity : argc >= -arity;
}

/** Case-insensitive option match, as Redis's `strcasecmp`. */
export function is(arg: string | undefined, option: string): boolean {
  return arg !== undefined && arg.toLowerCase() === option;
}

/** `getLongLongFromObjectOrReply`. */
export function longLongArg(text: string): bigint {
  const value = parseLongLong(text);
  if (value === undefined) throw new ReplyError(NOT_INTEGER);
  return value;
}

/**
 * The absolute expiry of `ms` from now, or an error when it overflows a `long long`
 * ("invalid expire time in 'set' command").
 */
export function expiryFrom(now: bigint, ms: bigint, command: string): bigint {
  const when = now + ms;
  if (!fitsLongLong(when)) throw new ReplyError(`ERR invalid expire time in '${command}' command`);
  return when;
}
