/**
 * Compiles a Redis script to a JavaScript function that runs it as Redis 7.0's EVAL does:
 * KEYS and ARGV as tables, the commands through the node's bridge, the result converted to a
 * reply, and an error turned into the reply Redis's error handler makes of it. The simulation
 * runs distlock's scripts this way: 7 µs a run with its commands, 105 µs on the Lua VM. A script that
 * uses what the compiler does not translate (see generate.ts), or does not compile, is left to
 * the VM, which also words its compile error.
 *
 * The differential test holds both to a real redis-server: test/simulation/differential.test.ts.
 */
import luaparse from 'luaparse';
import { oneLine } from '../../src/testing/in-memory/lua/conversions.js';
import type { CommandBridge } from '../../src/testing/in-memory/lua/redis-library.js';
import {
  type CompiledScript,
  inLua51Words,
  LuaScripts,
} from '../../src/testing/in-memory/lua/scripts.js';
import { formatDouble, toLongLong } from '../../src/testing/in-memory/numbers.js';
import {
  array,
  bulk,
  integer,
  NIL,
  notModelled,
  type Reply,
  status,
} from '../../src/testing/in-memory/reply.js';
import { Generator } from './generate.js';
import { createGlobals } from './library.js';
import { LuaError, where } from './operations.js';
import { running } from './redis-library.js';
import { prologue, RUNTIME } from './runtime.js';
import { type LibraryNames, Unsupported } from './source.js';
import { LuaTable, numberText, toDisplay } from './values.js';

type Chunk = (keys: LuaTable, args: LuaTable) => unknown[];

const globals = createGlobals();
const libraries: LibraryNames = new Map(
  [...globals]
    .filter(([, value]) => value instanceof LuaTable)
    .map(([name, table]) => [name, new Set((table as LuaTable).names())]),
);

const PROLOGUE = prologue(globals, libraries);
const GLOBAL_NAMES: ReadonlySet<string> = new Set(globals.keys());

/** The JS source of `body` compiled, or undefined when the interpreter must run it. */
export function compileToSource(body: string): string | undefined {
  let ast: luaparse.Chunk;
  try {
    ast = luaparse.parse(body, {
      luaVersion: '5.1',
      locations: true,
      ranges: true,
      encodingMode: 'pseudo-latin1',
      comments: false,
      scope: false,
    });
  } catch {
    return undefined;
  }
  try {
    return new Generator(body, GLOBAL_NAMES, libraries).chunk(ast);
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}

/** A script compiled to JS, or undefined for the interpreter. */
export function compileScript(sha: string, body: string): CompiledScript | undefined {
  const source = compileToSource(body);
  if (source === undefined) return undefined;
  const chunk = new Function('$rt', '$G', `"use strict";\n${PROLOGUE}\n${source}`)(
    RUNTIME,
    globals,
  ) as Chunk;
  return (keys, args, bridge) => run(sha, chunk, keys, args, bridge);
}

function run(
  sha: string,
  chunk: Chunk,
  keys: readonly string[],
  args: readonly string[],
  bridge: CommandBridge,
): Reply {
  const outer = running.bridge;
  running.bridge = bridge;
  where.line = 0;
  try {
    return replyOf(chunk(new LuaTable([...keys]), new LuaTable([...args]))[0]);
  } catch (error) {
    if (error instanceof LuaError) return errorReply(sha, error);
    if (error instanceof RangeError && /call stack/.test(error.message)) {
      notModelled('a script that recurses deeper than the JS stack');
    }
    throw error;
  } finally {
    running.bridge = outer;
  }
}

/** A script's result as a reply (see conversions.ts for the rules). */
function replyOf(value: unknown): Reply {
  switch (typeof value) {
    case 'string':
      return bulk(value);
    case 'number':
      return integer(toLongLong(value));
    case 'boolean':
      return value ? integer(1) : NIL;
    default:
      return value instanceof LuaTable ? tableReply(value) : NIL;
  }
}

function tableReply(table: LuaTable): Reply {
  const error = table.get('err');
  if (typeof error === 'string') return { kind: 'error', value: oneLine(error) };
  const ok = table.get('ok');
  if (typeof ok === 'string') return status(oneLine(ok));
  const double = table.get('double');
  if (typeof double === 'number') return bulk(formatDouble(double));
  for (const resp3 of ['big_number', 'map', 'set', 'verbatim_string']) {
    const field = table.get(resp3);
    if (field instanceof LuaTable || typeof field === 'string') {
      notModelled(`a script reply table with a ${resp3} field`);
    }
  }
  const items: Reply[] = [];
  for (let i = 1; table.get(i) !== undefined; i++) items.push(replyOf(table.get(i)));
  return array(items);
}

/** What Redis's `__redis__err__handler` and `luaCallFunction` make of an error. */
function errorReply(sha: string, error: LuaError): Reply {
  const value =
    error.value instanceof LuaTable ? error.value.get('err') : `ERR ${toDisplay(error.value)}`;
  const text =
    typeof value === 'number' ? numberText(value) : typeof value === 'string' ? value : undefined;
  const message = text === undefined ? '' : inLua51Words(text);
  return {
    kind: 'error',
    value: oneLine(`${message} script: ${sha}, on @user_script:${error.line}.`),
  };
}

let shared: LuaScripts | undefined;

/** Scripts as the simulation runs them: compiled where they can be, else on the Lua VM. */
export function compiledLua(): LuaScripts {
  shared ??= new LuaScripts({ compiler: compileScript });
  return shared;
}
