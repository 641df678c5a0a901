/**
 * Runs scripts as Redis 7.0's EVAL does: the body compiled as the chunk `@user_script` (so
 * that errors name `user_script:<line>`), KEYS and ARGV set as globals, the call protected
 * by Redis's error handler, and the result or the error written as a reply. One instance may
 * serve many simulated nodes (scripts keep no state between calls: globals are read-only);
 * each call names the node's commands through its bridge.
 */
import { fromBytes } from '../bytes.js';
import { bulk, type Reply } from '../reply.js';
import { luaString, oneLine, replyOf } from './conversions.js';
import { createEnvironment } from './environment.js';
import { fengari, type LuaState } from './fengari.js';
import type { CommandBridge } from './redis-library.js';

const { lua, lauxlib } = fengari;

/**
 * A runtime error in Lua 5.1's words: 5.3 writes "attempt to index a nil value (local 'x')"
 * where 5.1 writes "attempt to index local 'x' (a nil value)" (`luaG_typeerror`).
 */
export function inLua51Words(message: string): string {
  return message.replace(
    /attempt to (.+?) a (\w+) value \((global|local|upvalue|field|method) '(.*)'\)/,
    "attempt to $1 $3 '$4' (a $2 value)",
  );
}

/** A script turned into a function that runs it as EVAL does (see {@link ScriptCompiler}). */
export type CompiledScript = (
  keys: readonly string[],
  args: readonly string[],
  bridge: CommandBridge,
) => Reply;

/**
 * Turns a script into a {@link CompiledScript}, or answers undefined to leave it to the VM:
 * the simulation compiles distlock's scripts to JavaScript (simulation/lua/compile.ts).
 */
export type ScriptCompiler = (sha: string, body: string) => CompiledScript | undefined;

export interface LuaScriptsOptions {
  /** Runs the scripts it can compile instead of the VM. @default none */
  readonly compiler?: ScriptCompiler;
}

export class LuaScripts {
  readonly #L: LuaState;
  readonly #realGlobals: number;
  /** Compiled functions (registry references) by SHA1. */
  readonly #compiled = new Map<string, number>();
  /** Scripts the compiler took, by SHA1. */
  readonly #precompiled = new Map<string, CompiledScript>();
  readonly #compiler: ScriptCompiler | undefined;
  #bridge: CommandBridge | undefined;

  constructor(options: LuaScriptsOptions = {}) {
    const { L, realGlobals } = createEnvironment(() => {
      if (!this.#bridge) throw new Error('redis.call outside a script run');
      return this.#bridge;
    });
    this.#L = L;
    this.#realGlobals = realGlobals;
    this.#checkNumbers();
    this.#compiler = options.compiler;
  }

  /**
   * Compiles `body` (a byte string) once under `sha`: undefined when it compiles, else the
   * error reply EVAL answers with.
   */
  compile(sha: string, body: string): Reply | undefined {
    if (this.#compiled.has(sha) || this.#precompiled.has(sha)) return undefined;
    const precompiled = this.#compiler?.(sha, body);
    if (precompiled) {
      this.#precompiled.set(sha, precompiled);
      return undefined;
    }
    const L = this.#L;
    const bytes = luaString(body);
    if (lauxlib.luaL_loadbuffer(L, bytes, bytes.length, luaString('@user_script')) !== lua.LUA_OK) {
      const message = oneLine(this.#text(-1));
      lua.lua_settop(L, 0);
      return { kind: 'error', value: `ERR Error compiling script (new function): ${message}` };
    }
    this.#compiled.set(sha, lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX));
    return undefined;
  }

  /** Runs the compiled script `sha` with `keys` and `args`; `bridge` runs its commands. */
  run(sha: string, keys: readonly string[], args: readonly string[], bridge: CommandBridge): Reply {
    const precompiled = this.#precompiled.get(sha);
    if (precompiled) return precompiled(keys, args, bridge);
    const L = this.#L;
    const compiled = this.#compiled.get(sha);
    if (compiled === undefined) throw new Error(`script ${sha} was not compiled`);
    this.#setGlobalArray('KEYS', keys);
    this.#setGlobalArray('ARGV', args);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#realGlobals);
    lua.lua_pushstring(L, luaString('__redis__err__handler'));
    lua.lua_rawget(L, -2);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, compiled);
    this.#bridge = bridge;
    try {
      if (lua.lua_pcall(L, 0, 1, 2) !== lua.LUA_OK) return this.#errorReply(sha);
      return replyOf(L);
    } finally {
      this.#bridge = undefined;
      lua.lua_settop(L, 0);
    }
  }

  /** The reply for the error object at the top (`luaCallFunction`). */
  #errorReply(sha: string): Reply {
    const L = this.#L;
    if (lua.lua_type(L, -1) !== lua.LUA_TTABLE) {
      const message =
        lua.lua_type(L, -1) === lua.LUA_TSTRING ? this.#text(-1) : 'execution failure';
      return {
        kind: 'error',
        value: oneLine(`ERR Error running script ${sha}, ${message.slice(0, 100)}`),
      };
    }
    const field = (name: string): string | undefined => {
      lua.lua_pushstring(L, luaString(name));
      const type = lua.lua_rawget(L, -2);
      const text =
        type === lua.LUA_TSTRING || type === lua.LUA_TNUMBER ? this.#text(-1) : undefined;
      lua.lua_settop(L, -2);
      return text;
    };
    const [error, source, line] = [field('err'), field('source'), field('line')];
    const message = error === undefined ? undefined : inLua51Words(error);
    const where =
      source !== undefined && line !== undefined ? ` script: ${sha}, on ${source}:${line}.` : '';
    return { kind: 'error', value: oneLine(`${message ?? ''}${where}`) };
  }

  #setGlobalArray(name: string, values: readonly string[]): void {
    const L = this.#L;
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, this.#realGlobals);
    lua.lua_pushstring(L, luaString(name));
    lua.lua_createtable(L, values.length, 0);
    values.forEach((value, index) => {
      lua.lua_pushstring(L, luaString(value));
      lua.lua_rawseti(L, -2, index + 1);
    });
    lua.lua_rawset(L, -3);
    lua.lua_settop(L, 0);
  }

  #text(index: number): string {
    return fromBytes(lua.lua_tolstring(this.#L, index) ?? new Uint8Array());
  }

  /** Fails at once if fengari was loaded before its numbers could be made Lua 5.1's. */
  #checkNumbers(): void {
    const probe = "return tostring(2^53) .. ' ' .. 10 / 2 .. ' ' .. tonumber('0x10') * 1000000";
    const noCommands: CommandBridge = () => ({ kind: 'nil' });
    const expected = bulk('9.007199254741e+15 5 16000000');
    const compiled = this.compile('number-check', probe);
    const reply = compiled ?? this.run('number-check', [], [], noCommands);
    if (JSON.stringify(reply) !== JSON.stringify(expected)) {
      throw new Error(`fengari does not format numbers as Lua 5.1: ${JSON.stringify(reply)}`);
    }
  }
}
