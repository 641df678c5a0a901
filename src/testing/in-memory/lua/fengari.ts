/**
 * fengari (Lua 5.3 in JS), loaded so that its numbers behave as Redis's Lua 5.1 numbers do.
 * Lua 5.1 has only doubles; fengari has doubles and 32-bit integers, which wrap on overflow
 * (`tonumber(time[1]) * 1000` would) and print apart from floats (`1.0`). Two of its
 * functions are replaced before it loads, so that every number is a double, as in 5.1:
 * - reading a number (`luaO_str2num`: numerals in the source, `tonumber`, arithmetic on
 *   strings) follows 5.1's `luaO_str2d`: glibc `strtod` (hex, `inf`, `nan`, surrounding
 *   white space) and always yields a double;
 * - writing one (`lua_number2str`, `lua_integer2str`: `tostring`, `..`) is C's `%.14g`, with
 *   no `.0` added to integral values (`LUA_COMPAT_FLOATSTRING`);
 * - `a % b` is 5.1's `a - floor(a/b)*b` (5.3's `fmod` differs when `b` is infinite).
 * Integers remain only where 5.3 makes them (`#t`, string positions, loop counters over
 * lengths): small numbers that print and compare alike.
 */
import { createRequire } from 'node:module';
import { fromBytes } from '../bytes.js';
import { formatG, luaStringToNumber } from '../numbers.js';

/** A Lua state: opaque to this code. */
export type LuaState = { readonly __brand: 'lua_State' };
export type JsFunction = (L: LuaState) => number;

/** The part of fengari's API the simulation uses (its C API, with strings as bytes). */
export interface Fengari {
  readonly lua: {
    readonly LUA_OK: number;
    readonly LUA_TNIL: number;
    readonly LUA_TBOOLEAN: number;
    readonly LUA_TNUMBER: number;
    readonly LUA_TSTRING: number;
    readonly LUA_TTABLE: number;
    readonly LUA_REGISTRYINDEX: number;
    readonly LUA_RIDX_GLOBALS: number;
    lua_pushnumber(L: LuaState, n: number): void;
    lua_pushstring(L: LuaState, s: Uint8Array): void;
    lua_pushboolean(L: LuaState, b: boolean): void;
    lua_pushnil(L: LuaState): void;
    lua_pushvalue(L: LuaState, index: number): void;
    lua_pushjsfunction(L: LuaState, f: JsFunction): void;
    lua_pushjsclosure(L: LuaState, f: JsFunction, upvalues: number): void;
    lua_upvalueindex(n: number): number;
    lua_createtable(L: LuaState, narray: number, nrec: number): void;
    lua_rawseti(L: LuaState, index: number, n: number): void;
    lua_rawgeti(L: LuaState, index: number, n: number): number;
    lua_rawset(L: LuaState, index: number): void;
    lua_rawget(L: LuaState, index: number): number;
    lua_setfield(L: LuaState, index: number, k: Uint8Array): void;
    lua_setmetatable(L: LuaState, index: number): void;
    lua_type(L: LuaState, index: number): number;
    lua_tonumber(L: LuaState, index: number): number;
    lua_tolstring(L: LuaState, index: number): Uint8Array | null;
    lua_toboolean(L: LuaState, index: number): boolean;
    lua_gettop(L: LuaState): number;
    lua_settop(L: LuaState, index: number): void;
    lua_insert(L: LuaState, index: number): void;
    lua_remove(L: LuaState, index: number): void;
    lua_replace(L: LuaState, index: number): void;
    lua_pcall(L: LuaState, nargs: number, nresults: number, handler: number): number;
    lua_call(L: LuaState, nargs: number, nresults: number): void;
    lua_error(L: LuaState): never;
    lua_concat(L: LuaState, n: number): void;
    lua_rawlen(L: LuaState, index: number): number;
  };
  readonly lauxlib: {
    luaL_newstate(): LuaState;
    luaL_loadbuffer(L: LuaState, s: Uint8Array, size: number, name: Uint8Array): number;
    luaL_requiref(L: LuaState, name: Uint8Array, open: JsFunction, global: number): void;
    luaL_checknumber(L: LuaState, arg: number): number;
    luaL_checkany(L: LuaState, arg: number): void;
    luaL_tolstring(L: LuaState, index: number): Uint8Array;
    luaL_where(L: LuaState, level: number): void;
    luaL_ref(L: LuaState, table: number): number;
  };
  readonly lualib: Record<
    'luaopen_base' | 'luaopen_coroutine' | 'luaopen_table' | 'luaopen_string' | 'luaopen_math',
    JsFunction
  > & { readonly luaopen_debug: JsFunction };
}

interface TValue {
  setfltvalue(value: number): void;
}

function load(): Fengari {
  const require = createRequire(import.meta.url);
  require('fengari/src/fengaricore.js'); // loads luaconf.js as fengari does, before lobject.js
  const luaconf = require('fengari/src/luaconf.js') as Record<string, unknown>;
  luaconf.LUA_COMPAT_FLOATSTRING = true;
  luaconf.lua_number2str = (n: number) => formatG(n, 14);
  luaconf.lua_integer2str = (n: number) => formatG(n, 14);
  // 5.1's `%`: a - floor(a/b)*b (5.3 uses fmod, which differs for infinite operands)
  const llimits = require('fengari/src/llimits.js') as Record<string, unknown>;
  llimits.luai_nummod = (_L: unknown, a: number, b: number) => a - Math.floor(a / b) * b;
  const loaded = require('fengari') as Fengari; // in its own order: its modules require each other
  const lobject = require('fengari/src/lobject.js') as Record<string, unknown>;
  lobject.luaO_str2num = (text: Uint8Array, value: TValue): number => {
    const number = luaStringToNumber(fromBytes(text));
    if (number === undefined) return 0;
    value.setfltvalue(number);
    return text.length + 1;
  };
  return loaded;
}

/** fengari with Lua 5.1's numbers. */
export const fengari: Fengari = load();
