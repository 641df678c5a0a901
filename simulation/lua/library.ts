/**
 * The globals compiled scripts may use, as Redis 7.0's Lua 5.1 has them: the part of the base,
 * string, math and table libraries that distlock's scripts call (and a few neighbours), and
 * `redis.call`, `redis.pcall`, `redis.error_reply` and `redis.status_reply`. A script that
 * names anything else is left to the interpreter (see compile.ts), so nothing here needs to
 * stand in for what it does not model. Errors are 5.1's words (`luaL_argerror`).
 */

import type { CommandBridge } from '../../src/testing/in-memory/lua/redis-library.js';
import { formatDouble } from '../../src/testing/in-memory/numbers.js';
import type { Reply } from '../../src/testing/in-memory/reply.js';
import { call, hostError, LuaError, stringMethods, where } from './operations.js';
import { Matcher, PatternError } from './patterns.js';
import { FORMAT_CONVERSIONS, formatString } from './string-format.js';
import {
  type LuaFunction,
  LuaTable,
  NONE,
  toDisplay,
  toNumber,
  toText,
  typeName,
} from './values.js';

export { FORMAT_CONVERSIONS };

/** The node that runs the current script's commands. */
export const running: { bridge: CommandBridge | undefined } = { bridge: undefined };

/**
 * 5.1's `luaL_argerror`: the function is named as its caller named it (`where.callee`: 'rep'
 * for `string.rep(...)`, 'r' after `local r = string.rep`, '?' when called by `pcall`).
 */
function badArgument(n: number, message: string): LuaError {
  return hostError(`bad argument #${n} to '${where.callee}' (${message})`);
}

function expected(args: unknown[], n: number, type: string): LuaError {
  const got = n <= args.length ? typeName(args[n - 1]) : 'no value';
  return badArgument(n, `${type} expected, got ${got}`);
}

function checkAny(args: unknown[], n: number): void {
  if (n > args.length) throw badArgument(n, 'value expected');
}

function checkText(args: unknown[], n: number): string {
  const text = toText(args[n - 1]);
  if (text === undefined) throw expected(args, n, 'string');
  return text;
}

function checkNumber(args: unknown[], n: number): number {
  const value = toNumber(args[n - 1]);
  if (value === undefined) throw expected(args, n, 'number');
  return value;
}

/** `luaL_checkinteger`: C's cast, which truncates. */
function checkInteger(args: unknown[], n: number): number {
  return Math.trunc(checkNumber(args, n));
}

function optionalInteger(args: unknown[], n: number, fallback: number): number {
  return args[n - 1] === undefined ? fallback : checkInteger(args, n);
}

function checkTable(args: unknown[], n: number): LuaTable {
  const table = args[n - 1];
  if (!(table instanceof LuaTable)) throw expected(args, n, 'table');
  return table;
}

/** Runs `body`, turning a malformed pattern into the Lua error `str_find_aux` raises. */
function withPattern<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    if (error instanceof PatternError) throw hostError(error.message);
    throw error;
  }
}

/** 5.1's `posrelat`: a negative position counts from the end. */
function relative(position: number, length: number): number {
  if (position < 0) position += length + 1;
  return position >= 0 ? position : 0;
}

const SPECIALS = /[\^$*+?.([%-]/;

/** `string.find` and `string.match` (5.1's `str_find_aux`). */
function find(isFind: boolean): LuaFunction {
  return (...args) => {
    const source = checkText(args, 1);
    const pattern = checkText(args, 2);
    let init = relative(optionalInteger(args, 3, 1), source.length) - 1;
    if (init < 0) init = 0;
    else if (init > source.length) init = source.length;
    if (isFind && ((args[3] !== undefined && args[3] !== false) || !SPECIALS.test(pattern))) {
      const at = source.indexOf(pattern, init);
      return at === -1 ? [undefined] : [at + 1, at + pattern.length];
    }
    return withPattern(() => {
      const matcher = new Matcher(source, pattern);
      const anchored = matcher.pattern.startsWith('^');
      const start = anchored ? 1 : 0;
      let s = init;
      do {
        const end = matcher.match(s, start);
        if (end !== -1) {
          return isFind
            ? [s + 1, end, ...matcher.captures(s, end, false)]
            : matcher.captures(s, end);
        }
      } while (s++ < source.length && !anchored);
      return [undefined];
    });
  };
}

/** `string.gmatch`: an iterator over the matches (a leading `^` is no anchor in 5.1). */
const gmatch: LuaFunction = (...args) => {
  const source = checkText(args, 1);
  const pattern = checkText(args, 2);
  let position = 0;
  const next: LuaFunction = () =>
    withPattern(() => {
      const matcher = new Matcher(source, pattern);
      for (let s = position; s <= source.length; s++) {
        const end = matcher.match(s, 0);
        if (end !== -1) {
          position = end === s ? end + 1 : end;
          return matcher.captures(s, end);
        }
      }
      return NONE;
    });
  return [next];
};

function stringLibrary(): LuaTable {
  const functions: Record<string, LuaFunction> = {
    sub: (...args) => {
      const text = checkText(args, 1);
      let start = relative(checkInteger(args, 2), text.length);
      let end = relative(optionalInteger(args, 3, -1), text.length);
      if (start < 1) start = 1;
      if (end > text.length) end = text.length;
      return [start <= end ? text.slice(start - 1, end) : ''];
    },
    len: (...args) => [checkText(args, 1).length],
    lower: (...args) => [checkText(args, 1).replace(/[A-Z]+/g, (s) => s.toLowerCase())],
    upper: (...args) => [checkText(args, 1).replace(/[a-z]+/g, (s) => s.toUpperCase())],
    rep: (...args) => {
      const text = checkText(args, 1);
      const count = checkInteger(args, 2);
      return [count > 0 ? text.repeat(count) : ''];
    },
    find: find(true),
    match: find(false),
    gmatch,
    format: (...args) => [
      formatString(args, checkText(args, 1), {
        text: (n) => checkText(args, n),
        number: (n) => checkNumber(args, n),
        invalid: (message) => hostError(message),
      }),
    ],
  };
  return libraryTable(functions);
}

function mathLibrary(): LuaTable {
  const extreme =
    (better: (a: number, b: number) => boolean): LuaFunction =>
    (...args) => {
      let best = checkNumber(args, 1);
      for (let n = 2; n <= args.length; n++) {
        const value = checkNumber(args, n);
        if (better(value, best)) best = value;
      }
      return [best];
    };
  return libraryTable({
    floor: (...args) => [Math.floor(checkNumber(args, 1))],
    ceil: (...args) => [Math.ceil(checkNumber(args, 1))],
    abs: (...args) => [Math.abs(checkNumber(args, 1))],
    max: extreme((a, b) => a > b),
    min: extreme((a, b) => a < b),
  });
}

function tableLibrary(): LuaTable {
  return libraryTable({
    getn: (...args) => [checkTable(args, 1).length],
    insert: (...args) => {
      const table = checkTable(args, 1);
      let end = table.length + 1;
      let position = end;
      if (args.length === 3) {
        position = checkInteger(args, 2);
        if (position > end) end = position;
        for (let i = end; i > position; i--) table.set(i, table.get(i - 1));
      } else if (args.length !== 2) {
        throw hostError("wrong number of arguments to 'insert'");
      }
      table.set(position, args[args.length - 1]);
      return NONE;
    },
    concat: (...args) => {
      const table = checkTable(args, 1);
      const separator = args[1] === undefined ? '' : checkText(args, 2);
      const first = optionalInteger(args, 3, 1);
      const last = optionalInteger(args, 4, table.length);
      const parts: string[] = [];
      for (let i = first; i <= last; i++) {
        const text = toText(table.get(i));
        if (text === undefined) {
          throw hostError(`invalid value (at index ${i}) in table for 'concat'`);
        }
        parts.push(text);
      }
      return [parts.join(separator)];
    },
  });
}

function libraryTable(functions: Record<string, LuaFunction>): LuaTable {
  const table = new LuaTable([], true);
  for (const [name, f] of Object.entries(functions)) table.set(name, f);
  return table;
}

/** `luaPushError`: the `{err=...}` table of a failed command, its text starting with a code. */
function errorTable(message: string): LuaTable {
  let line = `ERR ${message}`;
  if (message.startsWith('-')) {
    const space = message.indexOf(' ');
    line = space === -1 ? `ERR ${message.slice(1)}` : message.slice(1);
  }
  return fieldTable('err', line.replace(/[\r\n]+$/, ''));
}

function fieldTable(name: string, value: string): LuaTable {
  const table = new LuaTable();
  table.set(name, value);
  return table;
}

/** A reply as `redis.call` returns it to Lua. */
export function luaValueOf(reply: Reply): unknown {
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

const ipairsStep: LuaFunction = (...args) => {
  const i = checkInteger(args, 2) + 1;
  const value = checkTable(args, 1).get(i);
  return value === undefined ? NONE : [i, value];
};

/** Redis 7.0's `pcall`: Lua's, but a failed `redis.call` comes back as its `err` text. */
const pcall: LuaFunction = (...args) => {
  checkAny(args, 1);
  const [f, ...rest] = args;
  if (typeof f !== 'function') return [false, `attempt to call a ${typeName(f)} value`];
  const line = where.line;
  try {
    return [true, ...call(f, -1, '', ...rest)];
  } catch (error) {
    if (!(error instanceof LuaError)) throw error;
    let value = error.value;
    if (value instanceof LuaTable) {
      const text = value.get('err');
      if (typeof text === 'string' || typeof text === 'number') value = text;
    }
    return [false, value];
  } finally {
    where.line = line;
  }
};

/** Most results `unpack` may give: 5.1's C stack (LUAI_MAXCSTACK) less its arguments. */
const MAX_RESULTS = 8000;

function baseFunctions(): Record<string, LuaFunction> {
  return {
    tonumber: (...args) => {
      const base = optionalInteger(args, 2, 10);
      if (base === 10) {
        checkAny(args, 1);
        return [toNumber(args[0])];
      }
      const text = checkText(args, 1);
      if (base < 2 || base > 36) throw badArgument(2, 'base out of range');
      return [unsignedInBase(text, base)];
    },
    tostring: (...args) => {
      checkAny(args, 1);
      return [toDisplay(args[0])];
    },
    type: (...args) => {
      checkAny(args, 1);
      return [typeName(args[0])];
    },
    unpack: (...args) => {
      const table = checkTable(args, 1);
      const first = optionalInteger(args, 2, 1);
      const last = optionalInteger(args, 3, table.length);
      if (first > last) return NONE;
      const count = last - first + 1;
      if (count <= 0 || args.length + count > MAX_RESULTS)
        throw hostError('too many results to unpack');
      const values: unknown[] = [];
      for (let i = first; i <= last; i++) values.push(table.get(i));
      return values;
    },
    ipairs: (...args) => [ipairsStep, checkTable(args, 1), 0],
    pcall,
  };
}

const SPACE = ' \t\n\v\f\r';

/** 5.1's `tonumber(s, base)`: C's `strtoul`, then only white space up to the end (or a NUL). */
function unsignedInBase(text: string, base: number): number | undefined {
  let i = 0;
  while (i < text.length && SPACE.includes(text[i] as string)) i++;
  const negative = text[i] === '-';
  if (text[i] === '+' || text[i] === '-') i++;
  if (base === 16 && text[i] === '0' && /[xX]/.test(text[i + 1] ?? '')) i += 2;
  const start = i;
  let value = 0n;
  for (; i < text.length; i++) {
    const digit = Number.parseInt(text[i] as string, 36);
    if (Number.isNaN(digit) || digit >= base) break;
    value = value * BigInt(base) + BigInt(digit);
  }
  if (i === start) return undefined;
  while (i < text.length && SPACE.includes(text[i] as string)) i++;
  if (i < text.length && text[i] !== '\0') return undefined;
  if (value > 2n ** 64n - 1n) return 2 ** 64; // ULONG_MAX, as a double
  return Number(BigInt.asUintN(64, negative ? -value : value));
}

/**
 * The globals a compiled script may name, by name (KEYS and ARGV are the script's own), and
 * for each library the functions it has here.
 */
export function createGlobals(): Map<string, unknown> {
  const string = stringLibrary();
  stringMethods.table = string;
  const redis = libraryTable({
    call: redisCall(true),
    pcall: redisCall(false),
    error_reply: replyTable('err'),
    status_reply: replyTable('ok'),
  });
  return new Map<string, unknown>([
    ...Object.entries(baseFunctions()),
    ['string', string],
    ['math', mathLibrary()],
    ['table', tableLibrary()],
    ['redis', redis],
  ]);
}
