/**
 * Values across the border between Redis and its Lua, as Redis 7.0 converts them (RESP2):
 * - a reply pushed for `redis.call`: integer → number, bulk → string, nil → false, status →
 *   `{ok=...}`, error → `{err=...}`, array → table;
 * - a script's return value written as a reply: number → integer (C's truncating cast),
 *   string → bulk, true → 1, false and nil → nil, `{err=s}` → error, `{ok=s}` → status,
 *   `{double=n}` → bulk `%.17g`, other tables → arrays up to their first nil;
 * - `redis.call` arguments: strings as they are, numbers as `%.17g`, anything else refused.
 */
import { fromBytes, toBytes } from '../bytes.js';
import { formatDouble, toLongLong } from '../numbers.js';
import { array, bulk, integer, NIL, notModelled, type Reply, status } from '../reply.js';
import { fengari, type LuaState } from './fengari.js';

const { lua } = fengari;

/** A byte string as a Lua string. */
export const luaString = (text: string): Uint8Array => toBytes(text);

/** Pushes `reply` as `redis.call` returns it. */
export function pushReply(L: LuaState, reply: Reply): void {
  switch (reply.kind) {
    case 'integer':
      lua.lua_pushnumber(L, Number(reply.value));
      return;
    case 'bulk':
      lua.lua_pushstring(L, luaString(reply.value));
      return;
    case 'nil':
      lua.lua_pushboolean(L, false);
      return;
    case 'status':
    case 'error':
      lua.lua_createtable(L, 0, 1);
      lua.lua_pushstring(L, luaString(reply.value));
      lua.lua_setfield(L, -2, luaString(reply.kind === 'status' ? 'ok' : 'err'));
      return;
    case 'array':
      lua.lua_createtable(L, reply.value.length, 0);
      reply.value.forEach((item, index) => {
        pushReply(L, item);
        lua.lua_rawseti(L, -2, index + 1);
      });
  }
}

/** The string field `name` of the table at the top, or undefined. */
function stringField(L: LuaState, name: string): string | undefined {
  lua.lua_pushstring(L, luaString(name));
  const type = lua.lua_rawget(L, -2);
  const value =
    type === lua.LUA_TSTRING ? fromBytes(lua.lua_tolstring(L, -1) ?? new Uint8Array()) : undefined;
  lua.lua_settop(L, -2);
  return value;
}

/** Whether the table at the top has a field `name` of Lua type `type`. */
function hasField(L: LuaState, name: string, type: number): boolean {
  lua.lua_pushstring(L, luaString(name));
  const found = lua.lua_rawget(L, -2) === type;
  lua.lua_settop(L, -2);
  return found;
}

/** Redis replaces CR and LF in error and status lines with spaces. */
export const oneLine = (text: string): string => text.replace(/[\r\n]/g, ' ');

/** The reply for the Lua value at the top of the stack (left there). */
export function replyOf(L: LuaState): Reply {
  switch (lua.lua_type(L, -1)) {
    case lua.LUA_TSTRING:
      return bulk(fromBytes(lua.lua_tolstring(L, -1) ?? new Uint8Array()));
    case lua.LUA_TNUMBER:
      return integer(toLongLong(lua.lua_tonumber(L, -1)));
    case lua.LUA_TBOOLEAN:
      return lua.lua_toboolean(L, -1) ? integer(1) : NIL;
    case lua.LUA_TTABLE:
      return tableReply(L);
    default:
      return NIL;
  }
}

function tableReply(L: LuaState): Reply {
  const error = stringField(L, 'err');
  if (error !== undefined) return { kind: 'error', value: oneLine(error) };
  const ok = stringField(L, 'ok');
  if (ok !== undefined) return status(oneLine(ok));
  lua.lua_pushstring(L, luaString('double'));
  if (lua.lua_rawget(L, -2) === lua.LUA_TNUMBER) {
    const value = lua.lua_tonumber(L, -1);
    lua.lua_settop(L, -2);
    return bulk(formatDouble(value));
  }
  lua.lua_settop(L, -2);
  for (const resp3 of ['big_number', 'map', 'set', 'verbatim_string']) {
    if (hasField(L, resp3, lua.LUA_TTABLE) || hasField(L, resp3, lua.LUA_TSTRING)) {
      notModelled(`a script reply table with a ${resp3} field`);
    }
  }
  const items: Reply[] = [];
  for (let index = 1; lua.lua_rawgeti(L, -1, index) !== lua.LUA_TNIL; index++) {
    items.push(replyOf(L));
    lua.lua_settop(L, -2);
  }
  lua.lua_settop(L, -2);
  return array(items);
}

/**
 * The `redis.call` arguments from stack index 1 on, as byte strings, or undefined when one is
 * neither a string nor a number.
 */
export function commandArgs(L: LuaState): string[] | undefined {
  const args: string[] = [];
  for (let index = 1; index <= lua.lua_gettop(L); index++) {
    const type = lua.lua_type(L, index);
    if (type === lua.LUA_TNUMBER) args.push(formatDouble(lua.lua_tonumber(L, index)));
    else if (type === lua.LUA_TSTRING)
      args.push(fromBytes(lua.lua_tolstring(L, index) ?? new Uint8Array()));
    else return undefined;
  }
  return args;
}
