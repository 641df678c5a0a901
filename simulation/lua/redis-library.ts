/**
 * The `redis` table of compiled scripts: `call` and `pcall` run a command on the node that
 * runs the script (its bridge, in {@link running}), with Redis 7.0's conversions both ways;
 * `error_reply` and `status_reply`.
 */
import { type CommandBridge, errorLine } from '../../src/testing/in-memory/lua/redis-library.js';
import { formatDouble } from '../../src/testing/in-memory/numbers.js';
import type { Reply } from '../../src/testing/in-memory/reply.js';
import { libraryTable } from './library-table.js';
import { hostError } from './operations.js';
import { type LuaFunction, LuaTable } from './values.js';

/** The node that runs the current script's commands. */
export const running: { bridge: CommandBridge | undefined } = { bridge: undefined };

/** `luaPushError`: the `{err=...}` table of a failed command, its text starting with a code. */
function errorTable(message: string): LuaTable {
  return fieldTable('err', errorLine(message));
}

function fieldTable(name: string, value: string): LuaTable {
  const table = new LuaTable();
  table.set(name, value);
  return table;
}

/** A reply as `redis.call` returns it to Lua. */
function luaValueOf(reply: Reply): unknown {
  switch (reply.kind) {
    case 'integer':
      return Number(reply.value);
    case 'bulk':
      return reply.value;
    case 'nil':
      return false;
    case 'status':
      return fieldTable('ok', reply.value);
    case 'error':
      return fieldTable('err', reply.value);
    case 'array':
      return new LuaTable(reply.value.map(luaValueOf));
  }
}

/** A `redis.call` that cannot run: raised, or returned by `redis.pcall`. */
function failedCall(raise: boolean, message: string): unknown[] {
  const error = errorTable(message);
  if (raise) throw hostError(error);
  return [error];
}

function redisCall(raise: boolean): LuaFunction {
  return (...args) => {
    if (args.length === 0) {
      return failedCall(raise, 'Please specify at least one argument for this redis lib call');
    }
    const argv: string[] = [];
    for (const arg of args) {
      if (typeof arg === 'string') argv.push(arg);
      else if (typeof arg === 'number') argv.push(formatDouble(arg));
      else return failedCall(raise, 'Lua redis lib command arguments must be strings or integers');
    }
    const bridge = running.bridge;
    if (!bridge) throw new Error('redis.call outside a script run');
    const reply = bridge(argv);
    const value = luaValueOf(reply);
    if (raise && reply.kind === 'error') throw hostError(value);
    return [value];
  };
}

function replyTable(field: 'ok' | 'err'): LuaFunction {
  return (...args) => {
    const text = args[0];
    if (args.length !== 1 || typeof text !== 'string')
      return [errorTable('wrong number or type of arguments')];
    if (field === 'ok') return [fieldTable('ok', text)];
    return [errorTable(text.startsWith('-') ? text : `-${text}`)];
  };
}

/** The `redis` table. */
export function redisLibrary(): LuaTable {
  return libraryTable({
    call: redisCall(true),
    pcall: redisCall(false),
    error_reply: replyTable('err'),
    status_reply: replyTable('ok'),
  });
}
