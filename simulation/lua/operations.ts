/**
 * What compiled code calls for the operations that can fail or coerce: arithmetic, `..`,
 * ordering, indexing and calls, with Lua 5.1's coercions and its error messages. Each takes
 * the line the operation is on and, for the operands an error may name, how Lua 5.1 names
 * them (`local 'x'`, `global 'x'`, `field 'x'`, `upvalue 'x'`, `method 'x'`, or '' for a
 * value with no name), worked out by the compiler as 5.1's `getobjname` does.
 */
import { notModelled } from '../../src/testing/in-memory/reply.js';
import { type LuaFunction, LuaTable, toNumber, toText, typeName } from './values.js';

/**
 * A Lua error on its way out of a script: `value` is what Lua would hold (a string, or the
 * `{err=...}` table a failed `redis.call` raises), `line` the line of the Lua code it left.
 */
export class LuaError {
  constructor(
    readonly value: unknown,
    readonly line: number,
  ) {}
}

/**
 * The line of the call being made: errors raised inside host functions are placed there. -1
 * while a host function calls one (`pcall(f)`): then no Lua code is the caller.
 */
export const where = { line: 0, callee: '?' };

/** The name a host function's errors give it: `r` for `local 'r'`, '?' for a nameless value. */
function calleeOf(name: string): string {
  const quoted = name.indexOf("'");
  return quoted === -1 ? '?' : name.slice(quoted + 1, -1);
}

/** A runtime error as `luaG_runerror` words it: placed at `line` of the script. */
export function runtimeError(message: string, line: number): LuaError {
  return new LuaError(`user_script:${line}: ${message}`, line);
}

/**
 * An error raised by a host function: a message as `luaL_error` words it (placed at the Lua
 * code that called the function, `luaL_where(L, 1)`), or a value as `lua_error` raises it.
 */
export function hostError(value: unknown): LuaError {
  const line = where.line;
  if (typeof value !== 'string' || line < 0) return new LuaError(value, line);
  return runtimeError(value, line);
}

function typeError(value: unknown, operation: string, name: string, line: number): LuaError {
  const type = typeName(value);
  return runtimeError(
    name
      ? `attempt to ${operation} ${name} (a ${type} value)`
      : `attempt to ${operation} a ${type} value`,
    line,
  );
}

export type ArithmeticOperator = '+' | '-' | '*' | '/' | '%';

/** 5.1's arithmetic, numbers or strings that read as numbers. */
export function arithmetic(
  operator: ArithmeticOperator,
  a: unknown,
  b: unknown,
  line: number,
  nameA: string,
  nameB: string,
): number {
  const x = toNumber(a);
  const y = toNumber(b);
  if (x === undefined || y === undefined) {
    // luaG_aritherror: the first operand that is not a number, else the second
    throw x === undefined
      ? typeError(a, 'perform arithmetic on', nameA, line)
      : typeError(b, 'perform arithmetic on', nameB, line);
  }
  switch (operator) {
    case '+':
      return x + y;
    case '-':
      return x - y;
    case '*':
      return x * y;
    case '/':
      return x / y;
    default:
      return x - Math.floor(x / y) * y;
  }
}

/** Unary minus. */
export function negate(a: unknown, line: number, name: string): number {
  const x = toNumber(a);
  if (x === undefined) throw typeError(a, 'perform arithmetic on', name, line);
  return -x;
}

/**
 * `a .. b .. c`: joined from the right, as 5.1's `luaV_concat` does; an error names the left
 * operand of the failing pair unless it is a string or a number (`luaG_concaterror`).
 */
export function concat(values: unknown[], names: string[], line: number): string {
  let i = values.length - 1;
  const last = values[i];
  let joined = toText(last);
  while (--i >= 0) {
    const text = toText(values[i]);
    if (text === undefined) throw typeError(values[i], 'concatenate', names[i] ?? '', line);
    if (joined === undefined) throw typeError(last, 'concatenate', names.at(-1) ?? '', line);
    joined = text + joined;
  }
  return joined as string;
}

function orderError(a: unknown, b: unknown, line: number): LuaError {
  const [x, y] = [typeName(a), typeName(b)];
  return runtimeError(
    x === y ? `attempt to compare two ${x} values` : `attempt to compare ${x} with ${y}`,
    line,
  );
}

/** `a < b` (and `b > a`, which 5.1 compiles to it): numbers, or strings byte by byte. */
export function lessThan(a: unknown, b: unknown, line: number): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a < b;
  if (typeof a === 'string' && typeof b === 'string') return a < b;
  throw orderError(a, b, line);
}

/** `a <= b` (and `b >= a`). */
export function lessOrEqual(a: unknown, b: unknown, line: number): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a <= b;
  if (typeof a === 'string' && typeof b === 'string') return a <= b;
  throw orderError(a, b, line);
}

/** Lua 5.1's string library, which a string indexes (`s:sub(1, 2)`, `s.len`). */
const STRING_FUNCTIONS = new Set(
  'byte char dump find format gfind gmatch gsub len lower match rep reverse sub upper'.split(' '),
);

/**
 * `base[key]`. A string's library function read from a string is not modelled (only the
 * direct calls compiled as `string.x(...)` are): anything else a string is indexed by is nil.
 */
export function index(base: unknown, key: unknown, line: number, name: string): unknown {
  if (base instanceof LuaTable) return base.get(key);
  if (typeof base === 'string') {
    if (typeof key === 'string' && STRING_FUNCTIONS.has(key)) {
      notModelled(`string.${key} read from a string`);
    }
    return undefined;
  }
  throw typeError(base, 'index', name, line);
}

/** `base[key] = value`. */
export function setIndex(
  base: unknown,
  key: unknown,
  value: unknown,
  line: number,
  name: string,
): void {
  if (!(base instanceof LuaTable)) throw typeError(base, 'index', name, line);
  if (base.readonly) throw runtimeError('Attempt to modify a readonly table', line);
  if (key === undefined) throw runtimeError('table index is nil', line);
  if (Number.isNaN(key)) throw runtimeError('table index is NaN', line);
  base.set(key, value);
}

/** `f(...)`: every result, in an array. */
export function call(f: unknown, line: number, name: string, ...args: unknown[]): unknown[] {
  where.line = line;
  where.callee = calleeOf(name);
  if (typeof f !== 'function') throw typeError(f, 'call', name, line);
  return (f as LuaFunction)(...args);
}

/** `for i = start, limit, step`: the three values as numbers, or 5.1's error. */
export function forNumbers(start: unknown, limit: unknown, step: unknown, line: number): number[] {
  const values = [start, limit, step].map(toNumber);
  const names = ['initial value', 'limit', 'step'];
  values.forEach((value, i) => {
    if (value === undefined) throw runtimeError(`'for' ${names[i]} must be a number`, line);
  });
  return values as number[];
}
