/**
 * What the compiler's two halves share (expressions.ts, generate.ts): the refusal that leaves a
 * script to the VM, the scopes of its locals, and how a node's source position is read.
 */
import type * as Lua from 'luaparse';

/** Something the compiler does not translate: the interpreter runs the script. */
export class Unsupported extends Error {}

interface Variable {
  readonly js: string;
  readonly name: string;
  readonly fn: FunctionContext;
}

export interface FunctionContext {
  temps: number;
  /** Locals declared in it (5.1 refuses more than 200 at once; this counts them all). */
  locals: number;
}

export class Scope {
  readonly #vars = new Map<string, Variable>();
  constructor(
    readonly parent: Scope | undefined,
    readonly fn: FunctionContext,
  ) {}

  find(name: string): Variable | undefined {
    return this.#vars.get(name) ?? this.parent?.find(name);
  }

  declare(name: string, js: string): Variable {
    const variable = { js, name, fn: this.fn };
    this.#vars.set(name, variable);
    return variable;
  }
}

/** The libraries' functions a script may name (`string.match`), by library. */
export type LibraryNames = ReadonlyMap<string, ReadonlySet<string>>;

export type Call = Lua.CallExpression | Lua.StringCallExpression | Lua.TableCallExpression;
export type Node = Lua.Node & {
  range?: [number, number];
  loc?: { start: { line: number }; end: { line: number } };
};

/** The line Lua 5.1 gives an operation: that of its last token, read when it is emitted. */
export function lineOf(node: Node): number {
  return node.loc?.end.line ?? 0;
}

export function startLineOf(node: Node): number {
  return node.loc?.start.line ?? 0;
}

/** The position of the next token after `from`: white space and comments skipped. */
export function nextToken(source: string, from: number): number {
  let i = from;
  for (;;) {
    while (i < source.length && /\s/.test(source[i] as string)) i++;
    if (!source.startsWith('--', i)) return i;
    const long = /^--\[(=*)\[/.exec(source.slice(i, i + 64));
    if (long) {
      const close = source.indexOf(`]${long[1]}]`, i);
      i = close === -1 ? source.length : close + (long[1] as string).length + 2;
    } else {
      const newline = source.indexOf('\n', i);
      i = newline === -1 ? source.length : newline + 1;
    }
  }
}

export function numberCode(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  return String(value);
}

/** The JS name a builtin is bound to in the compiled code (`string.match` → `$B_string_match`). */
export function builtinCode(name: string): string {
  return `$B_${name.replace('.', '_')}`;
}

/** The line (from 1) of position `at` of `source`. */
export function lineAt(source: string, at: number): number {
  let line = 1;
  for (let i = source.indexOf('\n'); i !== -1 && i < at; i = source.indexOf('\n', i + 1)) line++;
  return line;
}

/** Whether `name` appears as an identifier anywhere in `node` (scopes not told apart). */
export function mentions(node: unknown, name: string): boolean {
  if (Array.isArray(node)) return node.some((item) => mentions(item, name));
  if (typeof node !== 'object' || node === null) return false;
  const record = node as Record<string, unknown>;
  if (record.type === 'Identifier' && record.name === name) return true;
  return Object.entries(record).some(([key, value]) => key !== 'loc' && mentions(value, name));
}
