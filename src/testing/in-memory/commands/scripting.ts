/** EVAL, EVALSHA and SCRIPT (LOAD, EXISTS, FLUSH), over the node's script cache. */
import { createHash } from 'node:crypto';
import type { LuaScripts } from '../lua/scripts.js';
import { array, bulk, integer, notModelled, OK, type Reply, ReplyError } from '../reply.js';
import { type Command, type CommandContext, is, longLongArg } from './command.js';

export interface ScriptingContext extends CommandContext {
  /** Scripts this node has loaded: body (bytes) by SHA1; a restart or SCRIPT FLUSH empties it. */
  readonly scripts: Map<string, string>;
  readonly lua: LuaScripts;
  /** Runs a command on behalf of a script (see `SimulatedRedisNode`). */
  runFromScript(args: string[]): Reply;
}

const NOSCRIPT = 'NOSCRIPT No matching script. Please use EVAL.';

/** SHA1s of the script bodies seen (a simulation sends the same few over and over). */
const shas = new Map<string, string>();

function sha1(body: string): string {
  let sha = shas.get(body);
  if (sha === undefined) {
    sha = createHash('sha1').update(Buffer.from(body, 'latin1')).digest('hex');
    shas.set(body, sha);
  }
  return sha;
}

/** Compiles and caches `body` (EVAL, SCRIPT LOAD): its SHA1, or throws the compile error. */
function load(context: ScriptingContext, body: string): string {
  if (body.startsWith('#!')) notModelled('script flags (#!lua)');
  const sha = sha1(body);
  const failed = context.lua.compile(sha, body);
  if (failed) throw new ReplyError(failed.kind === 'error' ? failed.value : 'ERR');
  context.scripts.set(sha, body);
  return sha;
}

/** Redis 7.0's `evalGenericCommand`: numkeys first, then the script. */
function evaluate(context: ScriptingContext, args: readonly string[], bySha: boolean): Reply {
  const [script, numkeysText, ...rest] = args as [string, string, ...string[]];
  if (bySha && script.length !== 40) throw new ReplyError(NOSCRIPT);
  const numkeys = longLongArg(numkeysText);
  if (numkeys > BigInt(rest.length)) {
    throw new ReplyError(`ERR Number of keys can't be greater than number of args`);
  }
  if (numkeys < 0n) throw new ReplyError(`ERR Number of keys can't be negative`);
  let sha = script.toLowerCase();
  if (bySha && !context.scripts.has(sha)) throw new ReplyError(NOSCRIPT);
  if (!bySha) sha = load(context, script);
  const keys = rest.slice(0, Number(numkeys));
  const argv = rest.slice(Number(numkeys));
  return context.lua.run(sha, keys, argv, (command) => context.runFromScript(command));
}

const evalCommand: Command<ScriptingContext> = {
  name: 'eval',
  arity: -3,
  noScript: true,
  run: (context, args) => evaluate(context, args, false),
};

const evalsha: Command<ScriptingContext> = {
  name: 'evalsha',
  arity: -3,
  noScript: true,
  run: (context, args) => evaluate(context, args, true),
};

/** SCRIPT subcommands and their arity (the whole command counted, as Redis counts it). */
const SUBCOMMANDS: Record<string, number> = { load: 3, exists: -3, flush: -2, kill: 2, help: 2 };

const script: Command<ScriptingContext> = {
  name: 'script',
  arity: -2,
  noScript: true,
  run(context, args) {
    const sub = (args[0] as string).toLowerCase();
    const arity = SUBCOMMANDS[sub];
    if (arity === undefined) {
      throw new ReplyError(`ERR unknown subcommand '${args[0]}'. Try SCRIPT HELP.`);
    }
    const argc = args.length + 1;
    if (arity >= 0 ? argc !== arity : argc < -arity) {
      throw new ReplyError(`ERR wrong number of arguments for 'script|${sub}' command`);
    }
    if (sub === 'load') return bulk(load(context, args[1] as string));
    if (sub === 'exists') {
      return array(
        args.slice(1).map((sha) => integer(context.scripts.has(sha.toLowerCase()) ? 1 : 0)),
      );
    }
    if (sub === 'flush') {
      if (args.length > 2 || (args.length === 2 && !is(args[1], 'sync') && !is(args[1], 'async'))) {
        throw new ReplyError('ERR SCRIPT FLUSH only support SYNC|ASYNC option');
      }
      context.scripts.clear();
      return OK;
    }
    return notModelled(`SCRIPT ${sub.toUpperCase()}`);
  },
};

export const SCRIPTING_COMMANDS: readonly Command<ScriptingContext>[] = [
  evalCommand,
  evalsha,
  script,
];
