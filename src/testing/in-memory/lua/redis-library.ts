/**
 * The `redis` table a script sees, as Redis 7.0 provides it: `call` and `pcall` run a command
 * on the node (see {@link CommandBridge}), `error_reply`, `status_reply`, `sha1hex`, `log`
 * (a no-op here), `setresp` (RESP2 only), `set_repl` and `replicate_commands` (no-ops: a
 * simulated node has no replicas), and the constants.
 */
import { createHash } from 'node:crypto';
import { fromBytes } from '../bytes.js';
import type { Reply } from '../reply.js';
import { commandArgs, luaString, pushReply } from './conversions.js';
import { fengari, type JsFunction, type LuaState } from './fengari.js';

const { lua } = fengari;

/** Runs a command for a script: an error reply for an unknown command, a wrong arity... */
export type CommandBridge = (args: string[]) => Reply;

/**
 * Redis's `luaPushError`: a `{err=...}` table whose text starts with an error code (`ERR`
 * unless `message` is `-CODE text`).
 */
export function pushError(L: LuaState, message: string): void {
  pushReply(L, { kind: 'error', value: errorLine(message) });
}

/**
 * The text of {@link pushError}'s `err` field (Redis's `luaPushErrorBuff`): the code (after a
 * leading `-` up to the first space, else `ERR`), a space, and the message with line breaks
 * trimmed from both ends.
 */
export function errorLine(message: string): string {
  let [code, text] = ['ERR', message];
  if (message.startsWith('-')) {
    const space = message.indexOf(' ');
    [code, text] =
      space === -1
        ? ['ERR', message.slice(1)]
        : [message.slice(1, space), message.slice(space + 1)];
  }
  return `${code} ${text.replace(/^[\r\n]+|[\r\n]+$/g, '')}`;
}

/** Raises `{err=...}` (see {@link pushError}) as a Lua error. */
export function raiseError(L: LuaState, message: string): never {
  pushError(L, message);
  return lua.lua_error(L);
}

/** A function that raises "... does not model <name>" (a library distlock does not use). */
export function notModelledFunction(name: string): JsFunction {
  return (L) => raiseError(L, `distlock's simulated node does not model ${name}`);
}

function genericCall(bridge: () => CommandBridge, raise: boolean): JsFunction {
  return (L) => {
    const fail = (message: string): number => {
      if (raise) raiseError(L, message);
      pushError(L, message);
      return 1;
    };
    if (lua.lua_gettop(L) === 0) {
      return fail('Please specify at least one argument for this redis lib call');
    }
    const args = commandArgs(L);
    if (args === undefined) {
      return fail('Lua redis lib command arguments must be strings or integers');
    }
    const reply = bridge()(args);
    pushReply(L, reply);
    if (raise && reply.kind === 'error') return lua.lua_error(L);
    return 1;
  };
}

function singleField(field: 'ok' | 'err'): JsFunction {
  return (L) => {
    if (lua.lua_gettop(L) !== 1 || lua.lua_type(L, -1) !== lua.LUA_TSTRING) {
      pushError(L, 'wrong number or type of arguments');
      return 1;
    }
    const text = fromBytes(lua.lua_tolstring(L, -1) ?? new Uint8Array());
    if (field === 'err') pushError(L, text.startsWith('-') ? text : `-${text}`);
    else pushReply(L, { kind: 'status', value: text });
    return 1;
  };
}

const sha1hex: JsFunction = (L) => {
  if (lua.lua_gettop(L) !== 1) raiseError(L, 'wrong number of arguments');
  const bytes = lua.lua_tolstring(L, 1) ?? new Uint8Array();
  lua.lua_pushstring(L, luaString(createHash('sha1').update(bytes).digest('hex')));
  return 1;
};

const log: JsFunction = (L) => {
  const argc = lua.lua_gettop(L);
  if (argc < 2) raiseError(L, 'redis.log() requires two arguments or more.');
  if (lua.lua_type(L, 1) !== lua.LUA_TNUMBER) raiseError(L, 'First argument must be a number');
  const level = lua.lua_tonumber(L, 1);
  if (level < 0 || level > 3) raiseError(L, 'Invalid debug level.');
  return 0;
};

const setresp: JsFunction = (L) => {
  if (lua.lua_gettop(L) !== 1) raiseError(L, 'redis.setresp() requires one argument.');
  const resp = lua.lua_tonumber(L, 1);
  if (resp !== 2 && resp !== 3) raiseError(L, 'RESP version must be 2 or 3.');
  if (resp === 3) raiseError(L, "distlock's simulated node does not model RESP3");
  return 0;
};

const constant =
  (value: boolean): JsFunction =>
  (L) => {
    lua.lua_pushboolean(L, value);
    return 1;
  };

/** Pushes the `redis` table; `bridge()` is the node that runs the current script. */
export function pushRedisLibrary(L: LuaState, bridge: () => CommandBridge): void {
  const functions: Record<string, JsFunction> = {
    call: genericCall(bridge, true),
    pcall: genericCall(bridge, false),
    error_reply: singleField('err'),
    status_reply: singleField('ok'),
    sha1hex,
    log,
    setresp,
    set_repl: () => 0,
    replicate_commands: constant(true),
    breakpoint: constant(false),
    debug: () => 0,
    acl_check_cmd: notModelledFunction('redis.acl_check_cmd'),
  };
  const numbers: Record<string, number> = {
    LOG_DEBUG: 0,
    LOG_VERBOSE: 1,
    LOG_NOTICE: 2,
    LOG_WARNING: 3,
    REPL_NONE: 0,
    REPL_AOF: 1,
    REPL_SLAVE: 2,
    REPL_REPLICA: 2,
    REPL_ALL: 3,
    REDIS_VERSION_NUM: 0x07000f,
  };
  lua.lua_createtable(L, 0, 24);
  for (const [name, f] of Object.entries(functions)) {
    lua.lua_pushjsfunction(L, f);
    lua.lua_setfield(L, -2, luaString(name));
  }
  for (const [name, value] of Object.entries(numbers)) {
    lua.lua_pushnumber(L, value);
    lua.lua_setfield(L, -2, luaString(name));
  }
  lua.lua_pushstring(L, luaString('7.0.15'));
  lua.lua_setfield(L, -2, luaString('REDIS_VERSION'));
}
