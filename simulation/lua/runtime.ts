/**
 * What compiled code runs on: the operations of operations.ts, with the fast path of each
 * (numbers, strings) inline, and the builtins bound by name (see {@link prologue}).
 */

import {
  arithmetic,
  call,
  concat,
  forNumbers,
  index,
  lessOrEqual,
  lessThan,
  negate,
  runtimeError,
  setIndex,
  where,
} from './operations.js';
import { builtinCode, type LibraryNames } from './source.js';
import { LuaTable, NONE, truthy, typeName } from './values.js';

/** What compiled code binds: the operations, with their fast paths inline. */
export const RUNTIME = {
  NONE,
  Table: LuaTable,
  where,
  T: truthy,
  index,
  setIndex,
  call,
  callBuiltin: (
    f: (...args: unknown[]) => unknown[],
    line: number,
    callee: string,
    ...args: unknown[]
  ) => {
    where.line = line;
    where.callee = callee;
    return f(...args);
  },
  forNumbers,
  concat: (values: unknown[], names: string[], line: number): string => {
    if (values.every((value) => typeof value === 'string')) return values.join('');
    return concat(values, names, line);
  },
  add: (a: unknown, b: unknown, line: number, na: string, nb: string) =>
    typeof a === 'number' && typeof b === 'number' ? a + b : arithmetic('+', a, b, line, na, nb),
  sub: (a: unknown, b: unknown, line: number, na: string, nb: string) =>
    typeof a === 'number' && typeof b === 'number' ? a - b : arithmetic('-', a, b, line, na, nb),
  mul: (a: unknown, b: unknown, line: number, na: string, nb: string) =>
    typeof a === 'number' && typeof b === 'number' ? a * b : arithmetic('*', a, b, line, na, nb),
  div: (a: unknown, b: unknown, line: number, na: string, nb: string) =>
    typeof a === 'number' && typeof b === 'number' ? a / b : arithmetic('/', a, b, line, na, nb),
  mod: (a: unknown, b: unknown, line: number, na: string, nb: string) =>
    arithmetic('%', a, b, line, na, nb),
  neg: (a: unknown, line: number, name: string) =>
    typeof a === 'number' ? -a : negate(a, line, name),
  len: (a: unknown, line: number, name: string) => {
    if (typeof a === 'string') return a.length;
    if (a instanceof LuaTable) return a.length;
    throw runtimeError(
      name
        ? `attempt to get length of ${name} (a ${typeName(a)} value)`
        : `attempt to get length of a ${typeName(a)} value`,
      line,
    );
  },
  lt: (a: unknown, b: unknown, line: number) => lessThan(a, b, line),
  le: (a: unknown, b: unknown, line: number) => lessOrEqual(a, b, line),
  gt: (a: unknown, b: unknown, line: number) => lessThan(b, a, line),
  ge: (a: unknown, b: unknown, line: number) => lessOrEqual(b, a, line),
  /** `{k1 = v1, [k2] = v2}` from `[k1, v1, line1, k2, v2, line2...]`. */
  keyed: (fields: unknown[]) => {
    const table = new LuaTable();
    for (let i = 0; i < fields.length; i += 3) {
      setIndex(table, fields[i], fields[i + 1], fields[i + 2] as number, '');
    }
    return table;
  },
};

/**
 * The first lines of every compiled chunk's factory `($rt, $G) => chunk`: the operations and
 * the builtins bound to the names generated code uses (`$call`, `$B_string_match`...).
 */
export function prologue(globals: ReadonlyMap<string, unknown>, libraries: LibraryNames): string {
  return [
    `const { ${Object.keys(RUNTIME)
      .map((name) => `${name}: $${name}`)
      .join(', ')} } = $rt;`,
    ...[...globals.keys()].map(
      (name) => `const ${builtinCode(name)} = $G.get(${JSON.stringify(name)});`,
    ),
    ...[...libraries].flatMap(([library, names]) =>
      [...names].map(
        (name) =>
          `const ${builtinCode(`${library}.${name}`)} = $G.get(${JSON.stringify(library)}).get(${JSON.stringify(name)});`,
      ),
    ),
  ].join('\n');
}
