/**
 * The globals a script sees: Redis 7.0's Lua 5.1 environment, built on fengari's 5.3
 * libraries. Names 5.3 added are removed (a script that used `table.unpack` would fail on
 * Redis), 5.1 names are restored (`unpack`, `loadstring`, `math.pow`...), `math.floor` and
 * `math.ceil` return doubles, and the libraries distlock does not use (`bit`, `cjson`,
 * `cmsgpack`, `struct`, `math.random`) are there by name but raise "not modelled". As in Redis
 * 7.0, `debug` is hidden, reading an unknown global and writing any global or library field
 * raise errors, and `__redis__err__handler` turns an error into `{err, source, line}`.
 */
import { fromBytes } from '../bytes.js';
import { luaString } from './conversions.js';
import { fengari, type JsFunction, type LuaState } from './fengari.js';
import { helpers, STUBBED_LIBRARIES } from './lua51-library.js';
import { type CommandBridge, pushRedisLibrary } from './redis-library.js';

const { lua, lauxlib, lualib } = fengari;

/** Raises `message` as a Lua error at the position of the Lua code that caused it. */
function raiseAt(L: LuaState, message: string): never {
  lauxlib.luaL_where(L, 1);
  lua.lua_pushstring(L, luaString(message));
  lua.lua_concat(L, 2);
  return lua.lua_error(L);
}

const SETUP = `
local helpers, redis_library = ...
unpack, loadstring, gcinfo, pcall = table.unpack, load, helpers.gcinfo, helpers.pcall
string.gfind, math.mod = string.gmatch, math.fmod
for _, name in ipairs({'floor', 'ceil', 'pow', 'atan2', 'ldexp', 'frexp', 'cosh', 'sinh', 'tanh', 'log10'}) do
  math[name] = helpers[name]
end
math.random, math.randomseed = helpers['math.random'], helpers['math.randomseed']
table.getn, table.foreach = helpers.getn, helpers['table.foreach']
table.foreachi, table.maxn, table.setn = helpers['table.foreachi'], helpers['table.maxn'], helpers['table.setn']
rawlen, table.move, table.pack, table.unpack = nil, nil, nil, nil
string.pack, string.packsize, string.unpack = nil, nil, nil
math.maxinteger, math.mininteger, math.tointeger, math.type, math.ult = nil, nil, nil, nil, nil
coroutine.isyieldable, _VERSION = nil, 'Lua 5.1'
for library, names in pairs({bit = ${luaList('bit')}, cjson = ${luaList('cjson')}, cmsgpack = ${luaList('cmsgpack')}, struct = ${luaList('struct')}}) do
  local functions = {}
  for _, name in ipairs(names) do functions[name] = helpers[library .. '.' .. name] end
  _G[library] = functions
end
redis = redis_library
local dbg = debug
debug, dofile, loadfile, print = nil, nil, nil, nil
-- Redis's own handler, except that fengari says 'J' where C Lua says 'C' (a host function)
function __redis__err__handler(err)
  local i = dbg.getinfo(2,'nSl')
  if i and (i.what == 'C' or i.what == 'J') then
    i = dbg.getinfo(3,'nSl')
  end
  if type(err) ~= 'table' then
    err = {err='ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
`;

function luaList(library: string): string {
  return `{${(STUBBED_LIBRARIES[library] ?? []).map((name) => `'${name}'`).join(', ')}}`;
}

/**
 * Makes every global and library table read-only (Redis 7.0's `lua_enablereadonlytable`):
 * each is replaced by an empty proxy whose metatable reads from it, refuses writes, and
 * iterates it (`__pairs`). Reading a missing global raises, as in Redis.
 */
const PROTECT = `
local real, missing, readonly = ...
local function proxy(t, index)
  return setmetatable({}, {__index = index or t, __newindex = readonly, __pairs = function() return next, t, nil end})
end
for name, value in pairs(real) do
  if type(value) == 'table' and name ~= '_G' then
    real[name] = proxy(value)
  end
end
local globals = proxy(real, missing)
real._G = globals
return globals
`;

/** Creates a Lua state with Redis's script environment; `bridge()` runs commands. */
export function createEnvironment(bridge: () => CommandBridge): {
  L: LuaState;
  /** Registry reference of the real globals table (where KEYS and ARGV are set). */
  realGlobals: number;
} {
  const L = lauxlib.luaL_newstate();
  const libraries = ['_G', 'coroutine', 'table', 'string', 'math', 'debug'] as const;
  const openers = [
    lualib.luaopen_base,
    lualib.luaopen_coroutine,
    lualib.luaopen_table,
    lualib.luaopen_string,
    lualib.luaopen_math,
    lualib.luaopen_debug,
  ];
  libraries.forEach((name, i) => {
    lauxlib.luaL_requiref(L, luaString(name), openers[i] as JsFunction, 1);
    lua.lua_settop(L, 0);
  });
  run(L, SETUP, 'redis-setup', () => {
    lua.lua_createtable(L, 0, 64);
    for (const [name, f] of Object.entries(helpers())) {
      lua.lua_pushjsfunction(L, f);
      lua.lua_setfield(L, -2, luaString(name));
    }
    pushRedisLibrary(L, bridge);
    return 2;
  });
  lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, lua.LUA_RIDX_GLOBALS);
  const realGlobals = lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX);
  run(
    L,
    PROTECT,
    'redis-protect',
    () => {
      lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, realGlobals);
      lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, realGlobals); // the upvalue of missingGlobal
      lua.lua_pushjsclosure(L, missingGlobal, 1);
      lua.lua_pushjsfunction(L, (state) => raiseAt(state, 'Attempt to modify a readonly table'));
      return 3;
    },
    1,
  );
  lua.lua_rawseti(L, lua.LUA_REGISTRYINDEX, lua.LUA_RIDX_GLOBALS);
  lua.lua_settop(L, 0);
  return { L, realGlobals };
}

/** `__index` of the globals: the value, or an error for a global nobody defined. */
const missingGlobal: JsFunction = (L) => {
  lua.lua_pushvalue(L, 2);
  if (lua.lua_rawget(L, lua.lua_upvalueindex(1)) !== lua.LUA_TNIL) return 1;
  const name = fromBytes(lauxlib.luaL_tolstring(L, 2));
  return raiseAt(L, `Script attempted to access nonexistent global variable '${name}'`);
};

function run(L: LuaState, source: string, name: string, pushArgs: () => number, results = 0) {
  const bytes = luaString(source);
  if (lauxlib.luaL_loadbuffer(L, bytes, bytes.length, luaString(`=${name}`)) !== lua.LUA_OK) {
    throw new Error(`${name}: ${fromBytes(lua.lua_tolstring(L, -1) ?? new Uint8Array())}`);
  }
  if (lua.lua_pcall(L, pushArgs(), results, 0) !== lua.LUA_OK) {
    throw new Error(`${name}: ${fromBytes(lua.lua_tolstring(L, -1) ?? new Uint8Array())}`);
  }
}
