/**
 * How the library functions of compiled scripts read their arguments, as 5.1's `luaL_check*`
 * do: a number where a string is expected is written as one (`%.14g`), a string that reads as a
 * number is one, and a bad argument raises 5.1's `bad argument #n to 'f' (...)`.
 */
import { hostError, type LuaError, where } from './operations.js';
import { LuaTable, toNumber, toText, typeName } from './values.js';

/**
 * 5.1's `luaL_argerror`: the function is named as its caller named it (`where.callee`: 'rep'
 * for `string.rep(...)`, 'r' after `local r = string.rep`, '?' when called by `pcall`).
 */
export function badArgument(n: number, message: string): LuaError {
  return hostError(`bad argument #${n} to '${where.callee}' (${message})`);
}

function expected(args: unknown[], n: number, type: string): LuaError {
  const got = n <= args.length ? typeName(args[n - 1]) : 'no value';
  return badArgument(n, `${type} expected, got ${got}`);
}

export function checkAny(args: unknown[], n: number): void {
  if (n > args.length) throw badArgument(n, 'value expected');
}

export function checkText(args: unknown[], n: number): string {
  const text = toText(args[n - 1]);
  if (text === undefined) throw expected(args, n, 'string');
  return text;
}

export function checkNumber(args: unknown[], n: number): number {
  const value = toNumber(args[n - 1]);
  if (value === undefined) throw expected(args, n, 'number');
  return value;
}

const INT64_MIN = -(2 ** 63);

/**
 * `luaL_checkinteger`: C's cast to a 64-bit integer, which truncates (and on x86-64 gives
 * -2^63 for NaN, the infinities and what does not fit).
 */
export function checkInteger(args: unknown[], n: number): number {
  const value = checkNumber(args, n);
  return Number.isNaN(value) || value >= 2 ** 63 || value < INT64_MIN
    ? INT64_MIN
    : Math.trunc(value);
}

export function optionalInteger(args: unknown[], n: number, fallback: number): number {
  return args[n - 1] === undefined ? fallback : checkInteger(args, n);
}

/**
 * `luaL_checkint`: {@link checkInteger} cut to C's 32-bit `int`. `| 0` is that cut: ECMAScript's
 * ToInt32 takes an integral double modulo 2^32 exactly, at any size.
 */
export function checkInt(args: unknown[], n: number): number {
  return checkInteger(args, n) | 0;
}

export function optionalInt(args: unknown[], n: number, fallback: number): number {
  return args[n - 1] === undefined ? fallback : checkInt(args, n);
}

export function checkTable(args: unknown[], n: number): LuaTable {
  const table = args[n - 1];
  if (!(table instanceof LuaTable)) throw expected(args, n, 'table');
  return table;
}
