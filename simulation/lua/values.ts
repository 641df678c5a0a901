/**
 * Lua 5.1 values as compiled scripts hold them: nil is `undefined`, booleans and numbers (all
 * doubles, as in 5.1) are JS's, strings are byte strings (one char per byte, see
 * src/testing/in-memory/bytes.ts), functions are JS functions that take their arguments as
 * JS arguments and return their results as an array, and tables are {@link LuaTable}s.
 */
import { formatG, luaStringToNumber } from '../../src/testing/in-memory/numbers.js';
import { notModelled } from '../../src/testing/in-memory/reply.js';

/** A function as compiled code calls it: any arguments, every result in an array. */
export type LuaFunction = (...args: unknown[]) => unknown[];

/** No results (shared, and frozen: nothing may write into a result array). */
export const NONE: unknown[] = Object.freeze([]) as unknown as unknown[];

/**
 * A Lua table: an array part for the keys 1..n (kept without a trailing nil) and a map for the
 * rest. `#t` is the array part's length, the border Lua's gives a table without holes. Which
 * border 5.1 gives a table with holes depends on how its parts were sized as it grew, which
 * this does not model: `#t` of one says so rather than answer differently (distlock's
 * scripts make none).
 */
export class LuaTable {
  readonly array: unknown[];
  #hash: Map<unknown, unknown> | undefined;
  /** A library table: writes raise, as Redis 7.0's read-only tables do. */
  readonly readonly: boolean;
  /** Whether a nil was ever between values, or a whole key beyond the array part. */
  #holes = false;

  /** Takes `array` as its array part (the caller hands over a fresh one). */
  constructor(array: unknown[] = [], readonly = false) {
    this.array = array;
    this.readonly = readonly;
    while (array.length > 0 && array[array.length - 1] === undefined) array.pop();
    this.#holes = array.includes(undefined);
  }

  get(key: unknown): unknown {
    if (typeof key === 'number') {
      const array = this.array;
      if (key >= 1 && key <= array.length && Number.isInteger(key)) return array[key - 1];
    }
    return this.#hash?.get(key);
  }

  /** A raw write; the caller has refused nil and NaN keys. */
  set(key: unknown, value: unknown): void {
    const array = this.array;
    if (typeof key === 'number' && Number.isInteger(key) && key >= 1 && key <= array.length + 1) {
      if (key <= array.length) {
        array[key - 1] = value;
        if (value === undefined && key < array.length) this.#holes = true;
        while (array.length > 0 && array[array.length - 1] === undefined) array.pop();
        return;
      }
      if (value === undefined) {
        this.#hash?.delete(key);
        return;
      }
      array.push(value);
      this.#hash?.delete(key);
      // Keys set before their turn move into the array part once it reaches them.
      for (let next = array.length + 1; this.#hash?.has(next); next++) {
        array.push(this.#hash.get(next));
        this.#hash.delete(next);
      }
      return;
    }
    if (value === undefined) {
      this.#hash?.delete(key);
      return;
    }
    if (typeof key === 'number' && Number.isInteger(key) && key >= 1) this.#holes = true;
    this.#hash ??= new Map();
    this.#hash.set(key, value);
  }

  /** `#t`. */
  get length(): number {
    if (this.#holes) notModelled('the length of a Lua table with holes');
    return this.array.length;
  }

  /** The string keys (a library's function names). */
  names(): string[] {
    return [...(this.#hash?.keys() ?? [])].filter((key): key is string => typeof key === 'string');
  }
}

/** Lua's truth: everything but nil and false. */
export function truthy(value: unknown): boolean {
  return value !== undefined && value !== false;
}

/** Lua's type names (`type()`, error messages). */
export function typeName(value: unknown): string {
  switch (typeof value) {
    case 'undefined':
      return 'nil';
    case 'boolean':
      return 'boolean';
    case 'number':
      return 'number';
    case 'string':
      return 'string';
    case 'function':
      return 'function';
    default:
      return 'table';
  }
}

/** `%.14g`, how Lua 5.1 writes a number (`tostring`, `..`). */
export function numberText(value: number): string {
  return formatG(value, 14);
}

/** A string or number as a number (5.1's `luaV_tonumber`), or undefined. */
export function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return luaStringToNumber(value);
  return undefined;
}

/** A string or number as a string (5.1's `lua_tolstring`), or undefined. */
export function toText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return numberText(value);
  return undefined;
}

const addresses = new WeakMap<object, number>();
let addressCount = 0x55550000;

/** `tostring(v)`: tables and functions by a made-up address, as no two runs agree on it. */
export function toDisplay(value: unknown): string {
  const text = toText(value);
  if (text !== undefined) return text;
  if (value === undefined) return 'nil';
  if (typeof value === 'boolean') return String(value);
  const object = value as object;
  let address = addresses.get(object);
  if (address === undefined) {
    addressCount += 0x20;
    address = addressCount;
    addresses.set(object, address);
  }
  return `${typeName(value)}: 0x${address.toString(16).padStart(8, '0')}`;
}
