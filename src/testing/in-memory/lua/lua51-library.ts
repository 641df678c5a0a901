/**
 * The host functions that make fengari's 5.3 libraries look like Redis's Lua 5.1 (see
 * environment.ts): 5.1's math functions that 5.3 dropped, `math.floor` and `math.ceil`
 * returning doubles, Redis's `pcall`, and "not modelled" stand-ins for what distlock does
 * not use.
 */
import { luaString } from './conversions.js';
import { fengari, type JsFunction } from './fengari.js';
import { notModelledFunction } from './redis-library.js';

const { lua, lauxlib } = fengari;

const number =
  (f: (...args: number[]) => number, arity: number): JsFunction =>
  (L) => {
    const args = Array.from({ length: arity }, (_, i) => lauxlib.luaL_checknumber(L, i + 1));
    lua.lua_pushnumber(L, f(...args));
    return 1;
  };

const frexp: JsFunction = (L) => {
  const x = lauxlib.luaL_checknumber(L, 1);
  let exponent = x === 0 || !Number.isFinite(x) ? 0 : Math.floor(Math.log2(Math.abs(x))) + 1;
  let mantissa = x / 2 ** exponent;
  if (Math.abs(mantissa) >= 1) [mantissa, exponent] = [mantissa / 2, exponent + 1];
  lua.lua_pushnumber(L, mantissa);
  lua.lua_pushnumber(L, exponent);
  return 2;
};

/**
 * Redis 7.0's `pcall`: Lua's, except that an error table (a failed `redis.call`) comes back
 * as its `err` string, as it did when `redis.call` raised strings.
 */
const pcall: JsFunction = (L) => {
  lauxlib.luaL_checkany(L, 1);
  const argc = lua.lua_gettop(L);
  lua.lua_pushboolean(L, true);
  lua.lua_insert(L, 1);
  if (lua.lua_pcall(L, argc - 1, -1, 0) !== lua.LUA_OK) {
    lua.lua_remove(L, 1);
    if (lua.lua_type(L, -1) === lua.LUA_TTABLE) {
      lua.lua_pushstring(L, luaString('err'));
      const type = lua.lua_rawget(L, -2);
      if (type === lua.LUA_TSTRING || type === lua.LUA_TNUMBER) lua.lua_replace(L, -2);
      else lua.lua_settop(L, -2);
    }
    lua.lua_pushboolean(L, false);
    lua.lua_insert(L, 1);
  }
  return lua.lua_gettop(L);
};

export const STUBBED_LIBRARIES: Record<string, string[]> = {
  bit: 'arshift band bnot bor bswap bxor lshift rol ror rshift tobit tohex'.split(' '),
  cjson:
    'decode decode_invalid_numbers decode_max_depth encode encode_invalid_numbers encode_keep_buffer encode_max_depth encode_number_precision encode_sparse_array new null _NAME _VERSION'.split(
      ' ',
    ),
  cmsgpack: 'pack unpack unpack_limit unpack_one _COPYRIGHT _DESCRIPTION _NAME _VERSION'.split(' '),
  struct: ['pack', 'size', 'unpack'],
};

/** JS functions the setup chunk installs. */
export function helpers(): Record<string, JsFunction> {
  const found: Record<string, JsFunction> = {
    floor: number(Math.floor, 1),
    ceil: number(Math.ceil, 1),
    pow: number(Math.pow, 2),
    atan2: number(Math.atan2, 2),
    ldexp: number((m, e) => m * 2 ** Math.trunc(e), 2),
    cosh: number(Math.cosh, 1),
    sinh: number(Math.sinh, 1),
    tanh: number(Math.tanh, 1),
    log10: number(Math.log10, 1),
    frexp,
    pcall,
    getn: (L) => {
      lua.lua_pushnumber(L, lua.lua_rawlen(L, 1));
      return 1;
    },
  };
  for (const name of ['math.random', 'math.randomseed', 'gcinfo', 'table.foreach']) {
    found[name] = notModelledFunction(name);
  }
  for (const name of ['table.foreachi', 'table.maxn', 'table.setn']) {
    found[name] = notModelledFunction(name);
  }
  for (const [library, names] of Object.entries(STUBBED_LIBRARIES)) {
    for (const name of names)
      found[`${library}.${name}`] = notModelledFunction(`${library}.${name}`);
  }
  return found;
}
