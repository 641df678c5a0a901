/**
 * Lua 5.1 source (parsed by luaparse) to JavaScript source, for the part of the language that
 * distlock's scripts are written in: locals, closures, `if`, `while`, `repeat`, both `for`s
 * (the generic one over `ipairs` and `string.gmatch`), tables built from lists or names, every
 * operator, and calls with multiple results. Anything else throws {@link Unsupported}, and the
 * script is left to the interpreter. Globals are read-only: only those in `globals` may be read,
 * and none written.
 *
 * This half writes the statements and the chunk; expressions.ts writes the expressions.
 */
import type * as Lua from 'luaparse';
import { ExpressionWriter } from './expressions.js';
import {
  type Call,
  lineAt,
  lineOf,
  mentions,
  type Node,
  nextToken,
  Unsupported,
} from './source.js';

/** Writes one chunk (see {@link Generator.chunk}); a generator serves one script. */
export class Generator extends ExpressionWriter {
  /** The body of `function ($rt, $G) { ... }` that returns the chunk `($KEYS, $ARGV) => results`. */
  chunk(ast: Lua.Chunk): string {
    const fn = this.scope.fn;
    const body = this.block(ast.body);
    return [
      ...this.constants,
      'return function chunk($KEYS, $ARGV) {',
      'const $va = $NONE;',
      this.temps(fn),
      body,
      'return $NONE;',
      '};',
    ].join('\n');
  }

  // Statements

  protected block(statements: Lua.Statement[]): string {
    return statements.map((statement) => this.#statement(statement)).join('\n');
  }

  #statement(node: Lua.Statement): string {
    switch (node.type) {
      case 'LocalStatement':
        return this.#local(node);
      case 'AssignmentStatement':
        return this.#assignment(node);
      case 'CallStatement':
        return `${this.callValues(node.expression as Call)};`;
      case 'IfStatement':
        return node.clauses
          .map((clause) => {
            const body = this.inScope(() => this.block(clause.body));
            if (clause.type === 'ElseClause') return ` else {\n${body}\n}`;
            const keyword = clause.type === 'IfClause' ? 'if' : ' else if';
            return `${keyword} (${this.test(clause.condition)}) {\n${body}\n}`;
          })
          .join('');
      case 'WhileStatement':
        return `while (${this.test(node.condition)}) {\n${this.inScope(() => this.block(node.body))}\n}`;
      case 'RepeatStatement':
        return `for (;;) {\n${this.inScope(() => `${this.block(node.body)}\nif (${this.test(node.condition)}) break;`)}\n}`;
      case 'DoStatement':
        return `{\n${this.inScope(() => this.block(node.body))}\n}`;
      case 'ForNumericStatement':
        return this.#numericFor(node);
      case 'ForGenericStatement':
        return this.#genericFor(node);
      case 'ReturnStatement':
        return `return ${this.list(node.arguments, undefined)};`;
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
      values.length > 0 && this.isMulti(values[values.length - 1] as Lua.Expression, undefined);
    if (!multi) {
      const codes = values.map((value) => this.expression(value));
      const extra = codes.slice(node.variables.length).map((code) => `${code};`);
      const names = node.variables.map((variable) => this.declare(variable.name));
      const lets = names.map((name, i) => `${name} = ${codes[i] ?? 'undefined'}`);
      return [`let ${lets.join(', ')};`, ...extra].join('\n');
    }
    const list = this.list(values, undefined);
    const temp = this.id('$v');
    const names = node.variables.map((variable) => this.declare(variable.name));
    return `const ${temp} = ${list};\nlet ${names.map((name, i) => `${name} = ${temp}[${i}]`).join(', ')};`;
  }

  #assignment(node: Lua.AssignmentStatement): string {
    const line = lineOf(node as Node);
    const targets = node.variables.map((target) => this.#target(target, line));
    if (targets.length === 1 && node.init.length === 1) {
      const target = targets[0] as Target;
      return `${target.setup}${target.assign(this.expression(node.init[0] as Lua.Expression))};`;
    }
    const temp = this.id('$v');
    const setup = targets.map((target) => target.setup).join('');
    // 5.1 stores the values last target first.
    const assigns = targets.map((target, i) => `${target.assign(`${temp}[${i}]`)};`).reverse();
    return `${setup}const ${temp} = ${this.list(node.init, undefined)};\n${assigns.join('\n')}`;
  }

  /** Where an assignment stores; `line` is the statement's last (5.1 stores after the values). */
  #target(node: Lua.Expression, line: number): Target {
    if (node.type === 'Identifier') {
      const variable = this.scope.find(node.name);
      if (!variable) throw new Unsupported(`assignment to the global ${node.name}`);
      return { setup: '', assign: (value) => `${variable.js} = ${value}` };
    }
    if (node.type === 'MemberExpression' || node.type === 'IndexExpression') {
      const baseNode = node.base;
      if (this.library(baseNode)) throw new Unsupported('a write to a library');
      const base = this.id('$b');
      const key = this.id('$k');
      const keyCode =
        node.type === 'MemberExpression'
          ? JSON.stringify(node.identifier.name)
          : this.expression(node.index);
      const name = this.nameOf(baseNode);
      return {
        setup: `const ${base} = ${this.expression(baseNode)}, ${key} = ${keyCode};\n`,
        assign: (value) => `$setIndex(${base}, ${key}, ${value}, ${line}, ${JSON.stringify(name)})`,
      };
    }
    throw new Unsupported(node.type);
  }

  #functionStatement(node: Lua.FunctionDeclaration): string {
    const identifier = node.identifier;
    if (node.isLocal && identifier?.type === 'Identifier') {
      // JS has neither Lua's proper tail calls nor its depth limit (LUAI_MAXCALLS).
      if (mentions(node.body, identifier.name)) throw new Unsupported('a recursive function');
      const name = this.declare(identifier.name);
      return `let ${name};\n${name} = ${this.function(node)};`;
    }
    if (identifier?.type === 'MemberExpression' && identifier.indexer === '.') {
      const target = this.#target(identifier, lineOf(node as Node));
      return `${target.setup}${target.assign(this.function(node))};`;
    }
    throw new Unsupported('a global function or a method');
  }

  #numericFor(node: Lua.ForNumericStatement): string {
    // 5.1 checks the three values where it reads `do`.
    const last = (node.step ?? node.end) as Node;
    const line = lineAt(this.source, nextToken(this.source, last.range?.[1] ?? 0));
    const [start, limit, step, index] = [
      this.id('$i'),
      this.id('$l'),
      this.id('$s'),
      this.id('$x'),
    ];
    const stepCode = node.step ? this.expression(node.step) : '1';
    const head = `const [${start}, ${limit}, ${step}] = $forNumbers(${this.expression(node.start)}, ${this.expression(node.end)}, ${stepCode}, ${line});`;
    const body = this.inScope(() => {
      const variable = this.declare(node.variable.name);
      return `let ${variable} = ${index};\n${this.block(node.body)}`;
    });
    // 5.1 subtracts the step once, then adds it before each test: the same rounding.
    const loop = `for (let ${index} = ${start} - ${step}; (${index} += ${step}, ${step} > 0 ? ${index} <= ${limit} : ${limit} <= ${index}); )`;
    return `{\n${head}\n${loop} {\n${body}\n}\n}`;
  }

  #genericFor(node: Lua.ForGenericStatement): string {
    const [first] = node.iterators;
    const iterator =
      node.iterators.length === 1 && first?.type === 'CallExpression'
        ? this.builtinName(first.base)
        : undefined;
    if (iterator !== 'ipairs' && iterator !== 'string.gmatch') {
      throw new Unsupported('a generic for over anything but ipairs or string.gmatch');
    }
    const [f, state, control, results] = [
      this.id('$f'),
      this.id('$s'),
      this.id('$c'),
      this.id('$r'),
    ];
    const head = `let [${f}, ${state}, ${control}] = ${this.callValues(first as Call)};`;
    const body = this.inScope(() => {
      const names = node.variables.map((variable) => this.declare(variable.name));
      const lets = names.map((name, i) => `${name} = ${results}[${i}]`).join(', ');
      return `const ${results} = ${f}(${state}, ${control});\nif (${results}[0] === undefined) break;\n${control} = ${results}[0];\nlet ${lets};\n${this.block(node.body)}`;
    });
    return `{\n${head}\nfor (;;) {\n${body}\n}\n}`;
  }
}

interface Target {
  readonly setup: string;
  assign(value: string): string;
}
