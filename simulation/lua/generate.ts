/**
 * Lua 5.1 source (parsed by luaparse) to JavaScript source, for the part of the language that
 * distlock's scripts are written in: locals, closures, `if`, `while`, `repeat`, both `for`s
 * (the generic one over `ipairs` and `string.gmatch`), tables built from lists or names, every
 * operator, and calls with multiple results. Anything else throws {@link Unsupported}, and the
 * script is left to the interpreter. Globals are read-only: only those in `globals` may be read,
 * and none written.
 *
 * Values follow values.ts; operations that may coerce or fail go through operations.ts with
 * the line Lua 5.1 would report and the names its `getobjname` would give their operands.
 */
import type * as Lua from 'luaparse';
import { luaStringToNumber } from '../../src/testing/in-memory/numbers.js';
import { FORMAT_CONVERSIONS } from './string-format.js';

/** Something the compiler does not translate: the interpreter runs the script. */
export class Unsupported extends Error {}

interface Variable {
  readonly js: string;
  readonly name: string;
  readonly fn: FunctionContext;
}

interface FunctionContext {
  temps: number;
}

class Scope {
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

type Call = Lua.CallExpression | Lua.StringCallExpression | Lua.TableCallExpression;
type Node = Lua.Node & {
  range?: [number, number];
  loc?: { start: { line: number }; end: { line: number } };
};

const ARITHMETIC: Record<string, string> = {
  '+': 'add',
  '-': 'sub',
  '*': 'mul',
  '/': 'div',
  '%': 'mod',
  '^': 'pow',
};

export class Generator {
  readonly #source: string;
  readonly #globals: ReadonlySet<string>;
  readonly #libraries: LibraryNames;
  /** Constants hoisted out of the chunk: name lists of `..` chains. */
  readonly #constants: string[] = [];
  #ids = 0;
  #scope: Scope;

  constructor(source: string, globals: ReadonlySet<string>, libraries: LibraryNames) {
    this.#source = source;
    this.#globals = globals;
    this.#libraries = libraries;
    this.#scope = new Scope(undefined, { temps: 0 });
  }

  /** The body of `function ($rt, $G) { ... }` that returns the chunk `($KEYS, $ARGV) => results`. */
  chunk(ast: Lua.Chunk): string {
    const fn = this.#scope.fn;
    const body = this.#block(ast.body);
    return [
      ...this.#constants,
      'return function chunk($KEYS, $ARGV) {',
      'const $va = $NONE;',
      this.#temps(fn),
      body,
      'return $NONE;',
      '};',
    ].join('\n');
  }

  #id(prefix: string): string {
    this.#ids += 1;
    return `${prefix}${this.#ids}`;
  }

  #temp(): string {
    const fn = this.#scope.fn;
    fn.temps += 1;
    return `$t${fn.temps}`;
  }

  #temps(fn: FunctionContext): string {
    if (fn.temps === 0) return '';
    return `let ${Array.from({ length: fn.temps }, (_, i) => `$t${i + 1}`).join(', ')};`;
  }

  #inScope<T>(body: () => T, fn?: FunctionContext): T {
    const saved = this.#scope;
    this.#scope = new Scope(saved, fn ?? saved.fn);
    try {
      return body();
    } finally {
      this.#scope = saved;
    }
  }

  #declare(name: string): string {
    const js = `${name.replace(/[^A-Za-z0-9_]/g, '_')}$${++this.#ids}`;
    this.#scope.declare(name, js);
    return js;
  }

  // Statements

  #block(statements: Lua.Statement[]): string {
    return statements.map((statement) => this.#statement(statement)).join('\n');
  }

  #statement(node: Lua.Statement): string {
    switch (node.type) {
      case 'LocalStatement':
        return this.#local(node);
      case 'AssignmentStatement':
        return this.#assignment(node);
      case 'CallStatement':
        return `${this.#callValues(node.expression as Call)};`;
      case 'IfStatement':
        return node.clauses
          .map((clause) => {
            const body = this.#inScope(() => this.#block(clause.body));
            if (clause.type === 'ElseClause') return ` else {\n${body}\n}`;
            const keyword = clause.type === 'IfClause' ? 'if' : ' else if';
            return `${keyword} (${this.#test(clause.condition)}) {\n${body}\n}`;
          })
          .join('');
      case 'WhileStatement':
        return `while (${this.#test(node.condition)}) {\n${this.#inScope(() => this.#block(node.body))}\n}`;
      case 'RepeatStatement':
        return `for (;;) {\n${this.#inScope(() => `${this.#block(node.body)}\nif (${this.#test(node.condition)}) break;`)}\n}`;
      case 'DoStatement':
        return `{\n${this.#inScope(() => this.#block(node.body))}\n}`;
      case 'ForNumericStatement':
        return this.#numericFor(node);
      case 'ForGenericStatement':
        return this.#genericFor(node);
      case 'ReturnStatement':
        return `return ${this.#list(node.arguments, undefined)};`;
      case 'BreakStatement':
        return 'break;';
      case 'FunctionDeclaration':
        return this.#functionStatement(node);
      default:
        throw new Unsupported(node.type);
    }
  }

  #local(node: Lua.LocalStatement): string {
    const values = node.init;
    const multi =
      values.length > 0 && this.#isMulti(values[values.length - 1] as Lua.Expression, undefined);
    if (!multi) {
      const codes = values.map((value) => this.#expression(value));
      const extra = codes.slice(node.variables.length).map((code) => `${code};`);
      const names = node.variables.map((variable) => this.#declare(variable.name));
      const lets = names.map((name, i) => `${name} = ${codes[i] ?? 'undefined'}`);
      return [`let ${lets.join(', ')};`, ...extra].join('\n');
    }
    const list = this.#list(values, undefined);
    const temp = this.#id('$v');
    const names = node.variables.map((variable) => this.#declare(variable.name));
    return `const ${temp} = ${list};\nlet ${names.map((name, i) => `${name} = ${temp}[${i}]`).join(', ')};`;
  }

  #assignment(node: Lua.AssignmentStatement): string {
    const line = lineOf(node as Node);
    const targets = node.variables.map((target) => this.#target(target, line));
    if (targets.length === 1 && node.init.length === 1) {
      const target = targets[0] as Target;
      return `${target.setup}${target.assign(this.#expression(node.init[0] as Lua.Expression))};`;
    }
    const temp = this.#id('$v');
    const setup = targets.map((target) => target.setup).join('');
    const assigns = targets.map((target, i) => `${target.assign(`${temp}[${i}]`)};`);
    return `${setup}const ${temp} = ${this.#list(node.init, undefined)};\n${assigns.join('\n')}`;
  }

  /** Where an assignment stores; `line` is the statement's last (5.1 stores after the values). */
  #target(node: Lua.Expression, line: number): Target {
    if (node.type === 'Identifier') {
      const variable = this.#scope.find(node.name);
      if (!variable) throw new Unsupported(`assignment to the global ${node.name}`);
      return { setup: '', assign: (value) => `${variable.js} = ${value}` };
    }
    if (node.type === 'MemberExpression' || node.type === 'IndexExpression') {
      const baseNode = node.base;
      if (this.#library(baseNode)) throw new Unsupported('a write to a library');
      const base = this.#id('$b');
      const key = this.#id('$k');
      const keyCode =
        node.type === 'MemberExpression'
          ? JSON.stringify(node.identifier.name)
          : this.#expression(node.index);
      const name = this.#nameOf(baseNode);
      return {
        setup: `const ${base} = ${this.#expression(baseNode)}, ${key} = ${keyCode};\n`,
        assign: (value) => `$setIndex(${base}, ${key}, ${value}, ${line}, ${JSON.stringify(name)})`,
      };
    }
    throw new Unsupported(node.type);
  }

  #functionStatement(node: Lua.FunctionDeclaration): string {
    const identifier = node.identifier;
    if (node.isLocal && identifier?.type === 'Identifier') {
      const name = this.#declare(identifier.name);
      return `let ${name};\n${name} = ${this.#function(node)};`;
    }
    if (identifier?.type === 'MemberExpression' && identifier.indexer === '.') {
      const target = this.#target(identifier, lineOf(node as Node));
      return `${target.setup}${target.assign(this.#function(node))};`;
    }
    throw new Unsupported('a global function or a method');
  }

  #numericFor(node: Lua.ForNumericStatement): string {
    const line = lineOf(node as Node);
    const [start, limit, step, index] = [
      this.#id('$i'),
      this.#id('$l'),
      this.#id('$s'),
      this.#id('$x'),
    ];
    const stepCode = node.step ? this.#expression(node.step) : '1';
    const head = `const [${start}, ${limit}, ${step}] = $forNumbers(${this.#expression(node.start)}, ${this.#expression(node.end)}, ${stepCode}, ${line});`;
    const body = this.#inScope(() => {
      const variable = this.#declare(node.variable.name);
      return `let ${variable} = ${index};\n${this.#block(node.body)}`;
    });
    // 5.1 subtracts the step once, then adds it before each test: the same rounding.
    const loop = `for (let ${index} = ${start} - ${step}; (${index} += ${step}, ${step} > 0 ? ${index} <= ${limit} : ${limit} <= ${index}); )`;
    return `{\n${head}\n${loop} {\n${body}\n}\n}`;
  }

  #genericFor(node: Lua.ForGenericStatement): string {
    const [first] = node.iterators;
    const iterator =
      node.iterators.length === 1 && first?.type === 'CallExpression'
        ? this.#builtinName(first.base)
        : undefined;
    if (iterator !== 'ipairs' && iterator !== 'string.gmatch') {
      throw new Unsupported('a generic for over anything but ipairs or string.gmatch');
    }
    const [f, state, control, results] = [
      this.#id('$f'),
      this.#id('$s'),
      this.#id('$c'),
      this.#id('$r'),
    ];
    const head = `let [${f}, ${state}, ${control}] = ${this.#callValues(first as Call)};`;
    const body = this.#inScope(() => {
      const names = node.variables.map((variable) => this.#declare(variable.name));
      const lets = names.map((name, i) => `${name} = ${results}[${i}]`).join(', ');
      return `const ${results} = ${f}(${state}, ${control});\nif (${results}[0] === undefined) break;\n${control} = ${results}[0];\nlet ${lets};\n${this.#block(node.body)}`;
    });
    return `{\n${head}\nfor (;;) {\n${body}\n}\n}`;
  }

  // Expressions

  /** The expression's single value. */
  #expression(node: Lua.Expression): string {
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
        return JSON.stringify(node.value);
      case 'VarargLiteral':
        return '$va[0]';
      case 'Identifier':
        return this.#identifier(node.name);
      case 'FunctionDeclaration':
        return this.#function(node);
      case 'TableConstructorExpression':
        return this.#table(node);
      case 'CallExpression':
      case 'StringCallExpression':
      case 'TableCallExpression':
        return `${this.#callValues(node)}[0]`;
      case 'MemberExpression': {
        if (node.indexer !== '.') throw new Unsupported('a method');
        const builtin = this.#builtinName(node);
        if (builtin) return builtinCode(builtin);
        return `$index(${this.#expression(node.base)}, ${JSON.stringify(node.identifier.name)}, ${line}, ${JSON.stringify(this.#nameOf(node.base))})`;
      }
      case 'IndexExpression':
        if (this.#library(node.base)) throw new Unsupported('a library indexed by a value');
        return `$index(${this.#expression(node.base)}, ${this.#expression(node.index)}, ${line}, ${JSON.stringify(this.#nameOf(node.base))})`;
      case 'LogicalExpression': {
        const temp = this.#temp();
        const left = this.#expression(node.left);
        const right = this.#expression(node.right);
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
  #test(node: Lua.Expression): string {
    if (node.type === 'LogicalExpression') {
      const operator = node.operator === 'and' ? '&&' : '||';
      return `(${this.#test(node.left)} ${operator} ${this.#test(node.right)})`;
    }
    if (node.type === 'UnaryExpression' && node.operator === 'not')
      return `!${this.#test(node.argument)}`;
    if (
      node.type === 'BinaryExpression' &&
      ['==', '~=', '<', '<=', '>', '>='].includes(node.operator)
    ) {
      return this.#binary(node);
    }
    return `$T(${this.#expression(node)})`;
  }

  #identifier(name: string): string {
    const variable = this.#scope.find(name);
    if (variable) return variable.js;
    if (name === 'KEYS' || name === 'ARGV') return `$${name}`;
    if (!this.#globals.has(name)) throw new Unsupported(`the global ${name}`);
    return builtinCode(name);
  }

  /** `string.match` for a read of a library function, 'ipairs' for a global; else undefined. */
  #builtinName(node: Lua.Expression): string | undefined {
    if (
      node.type === 'Identifier' &&
      !this.#scope.find(node.name) &&
      this.#globals.has(node.name)
    ) {
      return this.#libraries.has(node.name) ? undefined : node.name;
    }
    if (node.type === 'MemberExpression' && node.indexer === '.' && this.#library(node.base)) {
      const library = (node.base as Lua.Identifier).name;
      const name = node.identifier.name;
      if (!this.#libraries.get(library)?.has(name)) throw new Unsupported(`${library}.${name}`);
      return `${library}.${name}`;
    }
    return undefined;
  }

  /** Whether `node` names a library table (`string`, `math`, `table`, `redis`). */
  #library(node: Lua.Expression): boolean {
    return (
      node.type === 'Identifier' && !this.#scope.find(node.name) && this.#libraries.has(node.name)
    );
  }

  /** How Lua 5.1 names the value of `node` in an error ('' when it has no name). */
  #nameOf(node: Lua.Expression): string {
    if (node.type === 'Identifier') {
      const variable = this.#scope.find(node.name);
      if (!variable) return `global '${node.name}'`;
      return variable.fn === this.#scope.fn ? `local '${node.name}'` : `upvalue '${node.name}'`;
    }
    if (node.type === 'MemberExpression') return `field '${node.identifier.name}'`;
    if (node.type === 'IndexExpression') {
      return node.index.type === 'StringLiteral' ? `field '${node.index.value}'` : "field '?'";
    }
    return '';
  }

  #function(node: Lua.FunctionDeclaration): string {
    const fn: FunctionContext = { temps: 0 };
    return this.#inScope(() => {
      const parameters: string[] = [];
      let vararg = false;
      for (const parameter of node.parameters) {
        if (parameter.type === 'VarargLiteral') vararg = true;
        else parameters.push(this.#declare(parameter.name));
      }
      const body = this.#block(node.body);
      const rest = vararg ? [...parameters, '...$va'] : parameters;
      return `(function (${rest.join(', ')}) {\n${this.#temps(fn)}\n${body}\nreturn $NONE;\n})`;
    }, fn);
  }

  #table(node: Lua.TableConstructorExpression): string {
    const fields = node.fields;
    if (fields.every((field) => field.type === 'TableValue')) {
      return `new $Table(${this.#list(
        fields.map((field) => field.value),
        undefined,
      )})`;
    }
    if (fields.some((field) => field.type === 'TableValue'))
      throw new Unsupported('a table of items and fields');
    const line = lineOf(node as Node);
    const pairs = fields.map((field) => {
      const key =
        field.type === 'TableKeyString'
          ? JSON.stringify(field.key.name)
          : this.#expression((field as Lua.TableKey).key);
      return `${key}, ${this.#expression(field.value)}`;
    });
    return `$keyed([${pairs.join(', ')}], ${line})`;
  }

  #unary(node: Lua.UnaryExpression): string {
    const line = lineOf(node as Node);
    const argument = this.#expression(node.argument);
    const name = JSON.stringify(this.#nameOf(node.argument));
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
    const left = this.#expression(node.left);
    const right = this.#expression(node.right);
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
    return node.type === 'NumericLiteral' || node.type === 'StringLiteral'
      ? ''
      : this.#nameOf(node);
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
    const names = this.#id('$n');
    this.#constants.push(
      `const ${names} = ${JSON.stringify(operands.map((operand) => this.#nameOf(operand)))};`,
    );
    return `$concat([${operands.map((operand) => this.#expression(operand)).join(', ')}], ${names}, ${line})`;
  }

  // Calls and lists

  /** A call's results, as an array. */
  #callValues(node: Call): string {
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
    const list = this.#arguments(args, node);
    const builtin = this.#builtinName(base);
    if (builtin === 'string.format') this.#checkFormat(args);
    // The line is set once the arguments are evaluated: they may run other code first.
    if (builtin) {
      const callee = JSON.stringify(builtin.split('.').at(-1));
      return `$callBuiltin(${builtinCode(builtin)}, ${line}, ${callee}${list ? `, ${list}` : ''})`;
    }
    return `$call(${this.#expression(base)}, ${line}, ${JSON.stringify(this.#nameOf(base))}${list ? `, ${list}` : ''})`;
  }

  #checkFormat(args: Lua.Expression[]): void {
    const format = args[0];
    if (format?.type !== 'StringLiteral' || format.value === null)
      throw new Unsupported('a format that is not a literal');
    for (const [, conversion] of format.value.matchAll(/%[-+ #0]*\d*(?:\.\d*)?(.)/g)) {
      if (!FORMAT_CONVERSIONS.has(conversion as string))
        throw new Unsupported(`string.format %${conversion}`);
    }
  }

  /** Arguments as JS arguments (a last call or `...` spread into them). */
  #arguments(args: Lua.Expression[], call: Call): string {
    return args
      .map((arg, i) => {
        if (i === args.length - 1 && this.#isMulti(arg, call)) return `...${this.#multi(arg)}`;
        return this.#expression(arg);
      })
      .join(', ');
  }

  /** Every value of an expression list, as a JS array expression. */
  #list(values: Lua.Expression[], enclosing: Call | undefined): string {
    const codes = values.map((value, i) => {
      if (i === values.length - 1 && this.#isMulti(value, enclosing))
        return `...${this.#multi(value)}`;
      return this.#expression(value);
    });
    if (codes.length === 1 && codes[0]?.startsWith('...')) return codes[0].slice(3);
    return `[${codes.join(', ')}]`;
  }

  #multi(node: Lua.Expression): string {
    return node.type === 'VarargLiteral' ? '$va' : this.#callValues(node as Call);
  }

  /** Whether `node` gives all its values where it stands: a call or `...` not in parentheses. */
  #isMulti(node: Lua.Expression, enclosing: Call | undefined): boolean {
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
    const next = nextToken(this.#source, end);
    if (this.#source[next] !== ')') return false;
    const closing =
      enclosing && (enclosing as Node).range
        ? ((enclosing as Node).range as [number, number])[1] - 1
        : -1;
    return next !== closing;
  }
}

interface Target {
  readonly setup: string;
  assign(value: string): string;
}

/** The line Lua 5.1 gives an operation: that of its last token, read when it is emitted. */
function lineOf(node: Node): number {
  return node.loc?.end.line ?? 0;
}

function startLineOf(node: Node): number {
  return node.loc?.start.line ?? 0;
}

/** The position of the next token after `from`: white space and comments skipped. */
function nextToken(source: string, from: number): number {
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

function numberCode(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  return String(value);
}

/** The JS name a builtin is bound to in the compiled code (`string.match` → `$B_string_match`). */
export function builtinCode(name: string): string {
  return `$B_${name.replace('.', '_')}`;
}
