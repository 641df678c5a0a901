/**
 * Lua 5.1 expressions to JavaScript expressions (the statements are generate.ts's): each
 * gives its single value, or in a list its every value; operations that may coerce or fail go
 * through operations.ts with the line Lua 5.1 would report and the names its `getobjname`
 * would give their operands. A global is read-only and must be one the compiler knows.
 */
import type * as Lua from 'luaparse';
import { luaStringToNumber } from '../../src/testing/in-memory/numbers.js';
import {
  builtinCode,
  type Call,
  type FunctionContext,
  type LibraryNames,
  lineAt,
  lineOf,
  type Node,
  nextToken,
  numberCode,
  Scope,
  startLineOf,
  Unsupported,
} from './source.js';
import { FORMAT_CONVERSIONS } from './string-format.js';

const ARITHMETIC: Record<string, string> = {
  '+': 'add',
  '-': 'sub',
  '*': 'mul',
  '/': 'div',
  '%': 'mod',
};

/** 5.1's LUAI_MAXVARS: a function with more locals does not compile. */
const MAX_LOCALS = 200;

/** Tokens read before the value before them is (see `#oneLineIndex`). */
const USED_AFTER = /^(?:[-+*/%^,)}<>]|\.\.|==|~=|and\b|or\b)/;

export abstract class ExpressionWriter {
  protected readonly source: string;
  protected readonly globals: ReadonlySet<string>;
  protected readonly libraries: LibraryNames;
  /** Constants hoisted out of the chunk: name lists of `..` chains. */
  protected readonly constants: string[] = [];
  protected ids = 0;
  protected scope: Scope;

  constructor(source: string, globals: ReadonlySet<string>, libraries: LibraryNames) {
    this.source = source;
    this.globals = globals;
    this.libraries = libraries;
    this.scope = new Scope(undefined, { temps: 0, locals: 0 });
  }

  /** The statements of a block (a function's body is one). */
  protected abstract block(statements: Lua.Statement[]): string;

  protected id(prefix: string): string {
    this.ids += 1;
    return `${prefix}${this.ids}`;
  }

  protected temp(): string {
    const fn = this.scope.fn;
    fn.temps += 1;
    return `$t${fn.temps}`;
  }

  protected temps(fn: FunctionContext): string {
    if (fn.temps === 0) return '';
    return `let ${Array.from({ length: fn.temps }, (_, i) => `$t${i + 1}`).join(', ')};`;
  }

  protected inScope<T>(body: () => T, fn?: FunctionContext): T {
    const saved = this.scope;
    this.scope = new Scope(saved, fn ?? saved.fn);
    try {
      return body();
    } finally {
      this.scope = saved;
    }
  }

  protected declare(name: string): string {
    if (++this.scope.fn.locals > MAX_LOCALS) throw new Unsupported('more locals than 5.1 allows');
    const js = `${name.replace(/[^A-Za-z0-9_]/g, '_')}$${++this.ids}`;
    this.scope.declare(name, js);
    return js;
  }

  // Expressions

  /** The expression's single value. */
  protected expression(node: Lua.Expression): string {
    const line = lineOf(node as Node);
    switch (node.type) {
      case 'NilLiteral':
        return 'undefined';
      case 'BooleanLiteral':
        return String(node.value);
      case 'NumericLiteral':
        return numberCode(luaStringToNumber(node.raw) ?? Number.NaN);
      case 'StringLiteral':
        if (node.value === null) throw new Unsupported('an undecoded string');
        // 5.1 reads a line break in a long string as \n, whatever it was.
        if (node.raw.startsWith('[') && node.raw.includes('\r')) {
          throw new Unsupported('a long string with a carriage return');
        }
        return JSON.stringify(node.value);
      case 'VarargLiteral':
        return '$va[0]';
      case 'Identifier':
        return this.#identifier(node.name);
      case 'FunctionDeclaration':
        return this.function(node);
      case 'TableConstructorExpression':
        return this.#table(node);
      case 'CallExpression':
      case 'StringCallExpression':
      case 'TableCallExpression':
        return `${this.callValues(node)}[0]`;
      case 'MemberExpression': {
        if (node.indexer !== '.') throw new Unsupported('a method');
        const builtin = this.builtinName(node);
        // Called elsewhere, string.format would skip the check of its format.
        if (builtin === 'string.format') throw new Unsupported('string.format as a value');
        if (builtin) return builtinCode(builtin);
        this.#oneLineIndex(node);
        return `$index(${this.expression(node.base)}, ${JSON.stringify(node.identifier.name)}, ${line}, ${JSON.stringify(this.nameOf(node.base))})`;
      }
      case 'IndexExpression':
        if (this.library(node.base)) throw new Unsupported('a library indexed by a value');
        this.#oneLineIndex(node);
        return `$index(${this.expression(node.base)}, ${this.expression(node.index)}, ${line}, ${JSON.stringify(this.nameOf(node.base))})`;
      case 'LogicalExpression': {
        const temp = this.temp();
        const left = this.expression(node.left);
        const right = this.expression(node.right);
        return node.operator === 'and'
          ? `($T(${temp} = ${left}) ? ${right} : ${temp})`
          : `($T(${temp} = ${left}) ? ${temp} : ${right})`;
      }
      case 'UnaryExpression':
        return this.#unary(node);
      case 'BinaryExpression':
        return this.#binary(node);
      default:
        throw new Unsupported((node as Lua.Node).type);
    }
  }

  /** The expression as a JS boolean, for a condition. */
  protected test(node: Lua.Expression): string {
    if (node.type === 'LogicalExpression') {
      const operator = node.operator === 'and' ? '&&' : '||';
      return `(${this.test(node.left)} ${operator} ${this.test(node.right)})`;
    }
    if (node.type === 'UnaryExpression' && node.operator === 'not')
      return `!${this.test(node.argument)}`;
    if (
      node.type === 'BinaryExpression' &&
      ['==', '~=', '<', '<=', '>', '>='].includes(node.operator)
    ) {
      return this.#binary(node);
    }
    return `$T(${this.expression(node)})`;
  }

  #identifier(name: string): string {
    const variable = this.scope.find(name);
    if (variable) return variable.js;
    if (name === 'KEYS' || name === 'ARGV') return `$${name}`;
    if (!this.globals.has(name)) throw new Unsupported(`the global ${name}`);
    // A library as a value would show only the functions compiled here.
    if (this.libraries.has(name)) throw new Unsupported(`the library ${name} as a value`);
    return builtinCode(name);
  }

  /**
   * 5.1 reads an indexed value when it is used: after an operator, `,`, `)` or `}` that
   * follows it has been read, so an error is on that token's line. When that line is not the
   * expression's own, the script is left to the VM rather than modelled.
   */
  #oneLineIndex(node: Lua.Expression): void {
    const next = nextToken(this.source, (node as Node).range?.[1] ?? 0);
    const rest = this.source.slice(next, next + 4);
    if (USED_AFTER.test(rest) && lineAt(this.source, next) !== lineOf(node as Node)) {
      throw new Unsupported('an index read used on a later line');
    }
  }

  /** `string.match` for a read of a library function, 'ipairs' for a global; else undefined. */
  protected builtinName(node: Lua.Expression): string | undefined {
    if (node.type === 'Identifier' && !this.scope.find(node.name) && this.globals.has(node.name)) {
      return this.libraries.has(node.name) ? undefined : node.name;
    }
    if (node.type === 'MemberExpression' && node.indexer === '.' && this.library(node.base)) {
      const library = (node.base as Lua.Identifier).name;
      const name = node.identifier.name;
      if (!this.libraries.get(library)?.has(name)) throw new Unsupported(`${library}.${name}`);
      return `${library}.${name}`;
    }
    return undefined;
  }

  /** Whether `node` names a library table (`string`, `math`, `table`, `redis`). */
  protected library(node: Lua.Expression): boolean {
    return (
      node.type === 'Identifier' && !this.scope.find(node.name) && this.libraries.has(node.name)
    );
  }

  /** How Lua 5.1 names the value of `node` in an error ('' when it has no name). */
  protected nameOf(node: Lua.Expression): string {
    if (node.type === 'Identifier') {
      const variable = this.scope.find(node.name);
      if (!variable) return `global '${node.name}'`;
      return variable.fn === this.scope.fn ? `local '${node.name}'` : `upvalue '${node.name}'`;
    }
    if (node.type === 'MemberExpression') return `field '${node.identifier.name}'`;
    if (node.type === 'IndexExpression') {
      return node.index.type === 'StringLiteral' ? `field '${node.index.value}'` : "field '?'";
    }
    return '';
  }

  protected function(node: Lua.FunctionDeclaration): string {
    const fn: FunctionContext = { temps: 0, locals: 0 };
    return this.inScope(() => {
      const parameters: string[] = [];
      let vararg = false;
      for (const parameter of node.parameters) {
        if (parameter.type === 'VarargLiteral') vararg = true;
        else parameters.push(this.declare(parameter.name));
      }
      const body = this.block(node.body);
      const rest = vararg ? [...parameters, '...$va'] : parameters;
      return `(function (${rest.join(', ')}) {\n${this.temps(fn)}\n${body}\nreturn $NONE;\n})`;
    }, fn);
  }

  #table(node: Lua.TableConstructorExpression): string {
    const fields = node.fields;
    if (fields.every((field) => field.type === 'TableValue')) {
      // A fresh array: a list of one call is that call's own result array (or `...`).
      const list = this.list(
        fields.map((field) => field.value),
        undefined,
      );
      return `new $Table(${list.startsWith('[') ? list : `[...${list}]`})`;
    }
    if (fields.some((field) => field.type === 'TableValue'))
      throw new Unsupported('a table of items and fields');
    // 5.1 stores each field once its value is read: an error is on that value's line.
    const triples = fields.map((field) => {
      const key =
        field.type === 'TableKeyString'
          ? JSON.stringify(field.key.name)
          : this.expression((field as Lua.TableKey).key);
      return `${key}, ${this.expression(field.value)}, ${lineOf(field.value as Node)}`;
    });
    return `$keyed([${triples.join(', ')}])`;
  }

  #unary(node: Lua.UnaryExpression): string {
    const line = lineOf(node as Node);
    const argument = this.expression(node.argument);
    const name = JSON.stringify(this.nameOf(node.argument));
    switch (node.operator) {
      case 'not':
        return `!$T(${argument})`;
      case '-':
        return `$neg(${argument}, ${line}, ${name})`;
      default:
        return `$len(${argument}, ${line}, ${name})`;
    }
  }

  #binary(node: Lua.BinaryExpression): string {
    const line = lineOf(node as Node);
    const operator = node.operator;
    if (operator === '..') return this.#concat(node, line);
    const left = this.expression(node.left);
    const right = this.expression(node.right);
    switch (operator) {
      case '==':
        return `(${left} === ${right})`;
      case '~=':
        return `(${left} !== ${right})`;
      case '<':
        return `$lt(${left}, ${right}, ${line})`;
      case '<=':
        return `$le(${left}, ${right}, ${line})`;
      case '>':
        return `$gt(${left}, ${right}, ${line})`;
      case '>=':
        return `$ge(${left}, ${right}, ${line})`;
      default: {
        const helper = ARITHMETIC[operator];
        // Not `^`: C's pow, which JS's does not match to the last bit.
        if (!helper) throw new Unsupported(`the operator ${operator}`);
        const names = [this.#literalName(node.left), this.#literalName(node.right)].map((n) =>
          JSON.stringify(n),
        );
        return `$${helper}(${left}, ${right}, ${line}, ${names.join(', ')})`;
      }
    }
  }

  /** An operand's name for arithmetic: a constant is not on Lua's stack, so it has none. */
  #literalName(node: Lua.Expression): string {
    return node.type === 'NumericLiteral' || node.type === 'StringLiteral' ? '' : this.nameOf(node);
  }

  /** `a .. b .. c` (right-associative) as one join, as 5.1 compiles a chain. */
  #concat(node: Lua.BinaryExpression, line: number): string {
    const operands: Lua.Expression[] = [node.left];
    let right = node.right;
    while (
      right.type === 'BinaryExpression' &&
      right.operator === '..' &&
      !this.#parenthesized(right)
    ) {
      operands.push(right.left);
      right = right.right;
    }
    operands.push(right);
    const names = this.id('$n');
    this.constants.push(
      `const ${names} = ${JSON.stringify(operands.map((operand) => this.nameOf(operand)))};`,
    );
    return `$concat([${operands.map((operand) => this.expression(operand)).join(', ')}], ${names}, ${line})`;
  }

  // Calls and lists

  /** A call's results, as an array. */
  protected callValues(node: Call): string {
    const args =
      node.type === 'CallExpression'
        ? node.arguments
        : node.type === 'StringCallExpression'
          ? [node.argument]
          : [node.arguments];
    const base = node.base;
    if (base.type === 'MemberExpression' && base.indexer === ':')
      throw new Unsupported('a method call');
    // 5.1 places a call on the line of its `(` (which must be the line its callee ends on), or
    // of its string or table argument.
    const line =
      node.type === 'CallExpression' ? lineOf(base as Node) : startLineOf(args[0] as Node);
    if (node.type === 'CallExpression') {
      const open = nextToken(this.source, (base as Node).range?.[1] ?? 0);
      // 5.1 refuses this ("ambiguous syntax"), luaparse does not.
      if (lineAt(this.source, open) !== line) throw new Unsupported('a call on a later line');
    }
    const list = this.#arguments(args, node);
    const builtin = this.builtinName(base);
    if (builtin === 'string.format') this.#checkFormat(args);
    // The line is set once the arguments are evaluated: they may run other code first.
    if (builtin) {
      const callee = JSON.stringify(builtin.split('.').at(-1));
      return `$callBuiltin(${builtinCode(builtin)}, ${line}, ${callee}${list ? `, ${list}` : ''})`;
    }
    return `$call(${this.expression(base)}, ${line}, ${JSON.stringify(this.nameOf(base))}${list ? `, ${list}` : ''})`;
  }

  /** A format string.format takes here: a literal of `%d`, `%i`, `%s` and `%%` only. */
  #checkFormat(args: Lua.Expression[]): void {
    const format = args[0];
    if (format?.type !== 'StringLiteral' || format.value === null) {
      throw new Unsupported('a format that is not a literal');
    }
    const text = format.value;
    for (let i = text.indexOf('%'); i !== -1; i = text.indexOf('%', i + 2)) {
      if (!FORMAT_CONVERSIONS.has(text[i + 1] ?? '')) {
        throw new Unsupported(`string.format ${text.slice(i, i + 2)}`);
      }
    }
  }

  /** Arguments as JS arguments (a last call or `...` spread into them). */
  #arguments(args: Lua.Expression[], call: Call): string {
    return args
      .map((arg, i) => {
        if (i === args.length - 1 && this.isMulti(arg, call)) return `...${this.#multi(arg)}`;
        return this.expression(arg);
      })
      .join(', ');
  }

  /** Every value of an expression list, as a JS array expression. */
  protected list(values: Lua.Expression[], enclosing: Call | undefined): string {
    const codes = values.map((value, i) => {
      if (i === values.length - 1 && this.isMulti(value, enclosing))
        return `...${this.#multi(value)}`;
      return this.expression(value);
    });
    if (codes.length === 1 && codes[0]?.startsWith('...')) return codes[0].slice(3);
    return `[${codes.join(', ')}]`;
  }

  #multi(node: Lua.Expression): string {
    return node.type === 'VarargLiteral' ? '$va' : this.callValues(node as Call);
  }

  /** Whether `node` gives all its values where it stands: a call or `...` not in parentheses. */
  protected isMulti(node: Lua.Expression, enclosing: Call | undefined): boolean {
    const multi =
      node.type === 'CallExpression' ||
      node.type === 'StringCallExpression' ||
      node.type === 'TableCallExpression' ||
      node.type === 'VarargLiteral';
    return multi && !this.#parenthesized(node, enclosing);
  }

  /**
   * Whether parentheses wrap `node` (luaparse keeps none): a `)` follows it that does not
   * close the enclosing call's arguments.
   */
  #parenthesized(node: Lua.Expression, enclosing?: Call): boolean {
    const end = (node as Node).range?.[1];
    if (end === undefined) throw new Unsupported('no source ranges');
    const next = nextToken(this.source, end);
    if (this.source[next] !== ')') return false;
    const closing =
      enclosing && (enclosing as Node).range
        ? ((enclosing as Node).range as [number, number])[1] - 1
        : -1;
    return next !== closing;
  }
}
