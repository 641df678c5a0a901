import { createHash } from 'node:crypto';
import { knownScripts, type RedisConnection } from '../driver/connection.js';

/**
 * A Lua script and its typed call: the call builds KEYS and ARGV from one input object, so
 * that their order is written once, next to the Lua that reads them.
 */
export interface Script<Input, Result> {
  readonly name: string;
  readonly lua: string;
  readonly sha1: string;
  /**
   * Runs the script on one node: EVAL the first time on a connection (which loads it), then
   * EVALSHA; EVAL again after a NOSCRIPT (a restart or `SCRIPT FLUSH`). The only place that
   * runs Lua. Not EVALSHA first: on NOSCRIPT, the commands sent behind it on the same
   * connection would run before its EVAL, and the lock's commands count on the order they
   * were sent in (a waiter leaves the line before its release, an acquisition's write comes
   * before its undo). Which scripts a server has is remembered per connection and shard
   * (see `knownScripts`).
   */
  run(connection: RedisConnection, input: Input, timeoutMs: number): Promise<Result>;
}

/** How a script is declared. Every key it touches must be among its `keys`. */
export interface ScriptDefinition<Input, Result> {
  readonly name: string;
  readonly lua: string;
  /** KEYS, in the order the Lua names them. */
  readonly keys: (input: Input) => readonly string[];
  /** ARGV, in the order the Lua names them. */
  readonly args: (input: Input) => readonly (string | number)[];
  /** Types the raw reply, rejecting anything unexpected. */
  readonly parse: (reply: unknown) => Result;
}

/** Declares a script; see {@link Script}. */
export function defineScript<Input, Result>(
  definition: ScriptDefinition<Input, Result>,
): Script<Input, Result> {
  const { name, lua, keys, args, parse } = definition;
  // Hashed at the first run, not at import: most programs run a few of the many scripts.
  let sha1 = '';
  let onOneServer = ''; // the `loaded` entry where no shard routes the script: ' <sha1>'
  const hashed = () => {
    if (!sha1) {
      sha1 = createHash('sha1').update(lua).digest('hex');
      onOneServer = ` ${sha1}`;
    }
    return sha1;
  };
  const failed = (error: unknown): never => {
    throw withCommandNamed(error, lua);
  };
  /** EVAL, which loads the script (`evalsha` minus its hash); `script` is known from then on. */
  const evaluate = (
    connection: RedisConnection,
    evalsha: readonly (string | number)[],
    script: string,
    timeoutMs: number,
  ) => {
    const evalArgs: (string | number)[] = [lua];
    for (let i = 1; i < evalsha.length; i++) evalArgs.push(evalsha[i] as string | number);
    return connection.send('EVAL', evalArgs, timeoutMs).then((reply) => {
      knownScripts(connection).add(script);
      return parse(reply);
    }, failed);
  };
  // A fan-out runs the script with the same input on every node: its EVALSHA arguments are
  // built once, for the first node, and used for the others (no caller changes an input).
  let lastInput: Input | undefined;
  let lastEvalsha: readonly (string | number)[] = [];
  return {
    name,
    lua,
    get sha1() {
      return hashed();
    },
    run(connection, input, timeoutMs) {
      if (input !== lastInput) lastEvalsha = evalshaArgs(hashed(), keys(input), args(input));
      lastInput = input;
      const evalsha = lastEvalsha;
      const shard = connection.shardOf?.('EVALSHA', evalsha);
      const script = shard ? `${shard} ${sha1}` : onOneServer;
      if (!knownScripts(connection).has(script))
        return evaluate(connection, evalsha, script, timeoutMs);
      return connection.send('EVALSHA', evalsha, timeoutMs).then(parse, (error: unknown) => {
        if (!isNoScript(error)) failed(error);
        knownScripts(connection).clear(); // the server lost its scripts: each loads again by its EVAL
        return evaluate(connection, evalsha, script, timeoutMs);
      });
    },
  };
}

/** EVALSHA's arguments: the hash, the number of keys, the keys, the arguments (no spreads). */
function evalshaArgs(
  sha1: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): (string | number)[] {
  const all: (string | number)[] = [sha1, keys.length];
  for (const key of keys) all.push(key);
  for (const arg of args) all.push(arg);
  return all;
}

/**
 * Redis reports a command that an ACL user may not run inside a script only by its line
 * ("can't run this command or subcommand script: <sha>, on @user_script:6"): name the
 * command on that line, so that the user knows which permission to grant. Valkey names it
 * ("ACL failure in script: User u has no permissions to run the 'zcount' command"): the same
 * hint then follows.
 */
function withCommandNamed(error: unknown, lua: string): unknown {
  if (!(error instanceof Error)) return error;
  const byServer = /ACL failure in script: .*no permissions to run the '(\w+)' command/.exec(
    error.message,
  )?.[1];
  const line = /can't run this command.*@user_script:(\d+)/.exec(error.message)?.[1];
  const command =
    byServer?.toUpperCase() ??
    (line === undefined
      ? undefined
      : /redis\.p?call\('(\w+)'/.exec(lua.split('\n')[Number(line) - 1] ?? '')?.[1]);
  if (!command) return error;
  const grant = `the script's ${command}: grant +${command.toLowerCase()}`;
  const hinted = new Error(`${error.message.replace(/\.$/, '')} (${grant})`);
  hinted.name = error.name;
  return hinted;
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Parses an integer reply, rejecting anything else (a misbehaving proxy, say). */
export function integerReply(script: string) {
  return (reply: unknown): number => {
    if (typeof reply === 'number' && Number.isInteger(reply)) return reply;
    throw new Error(`unexpected reply from script ${script}: ${String(reply)}`);
  };
}
