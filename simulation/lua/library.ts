/**
 * The globals compiled scripts may use, as Redis 7.0's Lua 5.1 has them: the part of the base,
 * string and math libraries that distlock's scripts call (and a few neighbours), and
 * `redis.call`, `redis.pcall`, `redis.error_reply` and `redis.status_reply`. A script that
 * names anything else is left to the interpreter (see compile.ts), so nothing here needs to
 * stand in for what it does not model. Errors are 5.1's words (`luaL_argerror`).
 */

import {
  badArgument,
  checkAny,
  checkInt,
  checkNumber,
  checkTable,
  checkText,
  optionalInt,
} from './arguments.js';
import { libraryTable } from './library-table.js';
import { call, hostError, LuaError, where } from './operations.js';
import { redisLibrary } from './redis-library.js';
import { stringLibrary } from './string-library.js';
import { type LuaFunction, LuaTable, NONE, toDisplay, toNumber, typeName } from './values.js';

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

const ipairsStep: LuaFunction = (...args) => {
  const i = checkInt(args, 2) + 1;
  const value = checkTable(args, 1).get(i);
  return value === undefined ? NONE : [i, value];
};

/** Redis 7.0's `pcall`: Lua's, but a failed `redis.call` comes back as its `err` text. */
const pcall: LuaFunction = (...args) => {
  if (args.length === 0) return [undefined]; // Redis's pcall does not check for a function
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
      const base = optionalInt(args, 2, 10);
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
      const first = optionalInt(args, 2, 1);
      const last = args[2] === undefined ? table.length : checkInt(args, 3);
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
  const redis = redisLibrary();
  return new Map<string, unknown>([
    ...Object.entries(baseFunctions()),
    ['string', string],
    ['math', mathLibrary()],
    ['redis', redis],
  ]);
}
