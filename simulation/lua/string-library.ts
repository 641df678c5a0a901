/**
 * The `string` library of compiled scripts: `sub`, `len`, `lower`, `upper`, `rep`, `find`,
 * `match`, `gmatch` (5.1's pattern matcher, patterns.ts) and `format` (string-format.ts).
 */
import {
  badArgument,
  checkInt,
  checkInteger,
  checkNumber,
  checkText,
  optionalInteger,
} from './arguments.js';
import { libraryTable } from './library-table.js';
import { hostError } from './operations.js';
import { Matcher, PatternError } from './patterns.js';
import { formatString } from './string-format.js';
import { type LuaFunction, type LuaTable, NONE } from './values.js';

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
    // C's strpbrk looks for the special characters up to the first NUL only.
    const plain =
      (args[3] !== undefined && args[3] !== false) || !SPECIALS.test(pattern.split('\0')[0] ?? '');
    if (isFind && plain) {
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

export function stringLibrary(): LuaTable {
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
      const count = checkInt(args, 2);
      return [count > 0 ? text.repeat(count) : ''];
    },
    find: find(true),
    match: find(false),
    gmatch,
    format: (...args) => [
      formatString(checkText(args, 1), {
        count: args.length,
        text: (n) => checkText(args, n),
        number: (n) => checkNumber(args, n),
        missing: (n) => badArgument(n, 'no value'),
      }),
    ],
  };
  return libraryTable(functions);
}
