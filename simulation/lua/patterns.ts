/**
 * Lua 5.1's patterns (lstrlib.c's matcher) on byte strings: classes in the C locale, sets,
 * the four repetitions, anchors, captures (position captures and back references), `%b` and
 * `%f`. A pattern ends at its first NUL, as 5.1's C code reads it. Errors are 5.1's words.
 */

const CAP_UNFINISHED = -1;
const CAP_POSITION = -2;
const MAX_CAPTURES = 32;

/** A malformed pattern: raised as the Lua error of the function that was given it. */
export class PatternError extends Error {}

/** The C locale's `<ctype.h>` class of byte `c` for class letter `letter` (lower case). */
function inClass(c: number, letter: string): boolean | undefined {
  switch (letter) {
    case 'a':
      return (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    case 'c':
      return c < 32 || c === 127;
    case 'd':
      return c >= 48 && c <= 57;
    case 'l':
      return c >= 97 && c <= 122;
    case 'p':
      return (
        (c >= 33 && c <= 47) ||
        (c >= 58 && c <= 64) ||
        (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126)
      );
    case 's':
      return c === 32 || (c >= 9 && c <= 13);
    case 'u':
      return c >= 65 && c <= 90;
    case 'w':
      return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    case 'x':
      return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
    case 'z':
      return c === 0;
    default:
      return undefined;
  }
}

const isDigit = (code: number): boolean => code >= 48 && code <= 57;

interface Capture {
  init: number;
  len: number;
}

/** One match of `pattern` against `source`, as `str_find_aux` and `gmatch` run it. */
export class Matcher {
  readonly #src: string;
  readonly #pat: string;
  #level = 0;
  readonly #captures: Capture[] = [];

  constructor(source: string, pattern: string) {
    this.#src = source;
    const nul = pattern.indexOf('\0');
    this.#pat = nul === -1 ? pattern : pattern.slice(0, nul);
  }

  get pattern(): string {
    return this.#pat;
  }

  /** Where a match of the pattern from `p` that starts at `s` ends, or -1. */
  match(s: number, p: number): number {
    this.#level = 0;
    return this.#doMatch(s, p);
  }

  /** The captures of the last match `[s, e)` (the whole match when the pattern has none). */
  captures(s: number, e: number, wholeIfNone = true): unknown[] {
    const count = this.#level === 0 && wholeIfNone ? 1 : this.#level;
    const values: unknown[] = [];
    for (let i = 0; i < count; i++) values.push(this.#capture(i, s, e));
    return values;
  }

  #capture(i: number, s: number, e: number): unknown {
    if (i >= this.#level) {
      if (i === 0) return this.#src.slice(s, e);
      throw new PatternError('invalid capture index');
    }
    const { init, len } = this.#captures[i] as Capture;
    if (len === CAP_UNFINISHED) throw new PatternError('unfinished capture');
    if (len === CAP_POSITION) return init + 1;
    return this.#src.slice(init, init + len);
  }

  #at(p: number): string {
    return p < this.#pat.length ? (this.#pat[p] as string) : '\0';
  }

  #classEnd(p: number): number {
    const pat = this.#pat;
    const c = this.#at(p++);
    if (c === '%') {
      if (p >= pat.length) throw new PatternError("malformed pattern (ends with '%')");
      return p + 1;
    }
    if (c === '[') {
      if (this.#at(p) === '^') p++;
      do {
        if (p >= pat.length) throw new PatternError("malformed pattern (missing ']')");
        if (pat[p++] === '%' && p < pat.length) p++;
      } while (this.#at(p) !== ']');
      return p + 1;
    }
    return p;
  }

  #singleClass(c: number, letter: string): boolean {
    const lower = letter.toLowerCase();
    const found = /[a-z]/i.test(letter) ? inClass(c, lower) : undefined;
    if (found === undefined) return letter.charCodeAt(0) === c;
    return letter !== lower ? !found : found;
  }

  #bracketClass(c: number, p: number, end: number): boolean {
    const pat = this.#pat;
    let matches = true;
    if (this.#at(p + 1) === '^') {
      matches = false;
      p++;
    }
    while (++p < end) {
      if (pat[p] === '%') {
        p++;
        if (this.#singleClass(c, this.#at(p))) return matches;
      } else if (this.#at(p + 1) === '-' && p + 2 < end) {
        p += 2;
        if (pat.charCodeAt(p - 2) <= c && c <= pat.charCodeAt(p)) return matches;
      } else if (pat.charCodeAt(p) === c) return matches;
    }
    return !matches;
  }

  #single(s: number, p: number, ep: number): boolean {
    if (s >= this.#src.length) return false;
    const c = this.#src.charCodeAt(s);
    switch (this.#pat[p]) {
      case '.':
        return true;
      case '%':
        return this.#singleClass(c, this.#at(p + 1));
      case '[':
        return this.#bracketClass(c, p, ep - 1);
      default:
        return this.#pat.charCodeAt(p) === c;
    }
  }

  #doMatch(s: number, p: number): number {
    const pat = this.#pat;
    for (;;) {
      if (p >= pat.length) return s;
      const c = pat[p];
      if (c === '(') {
        return pat[p + 1] === ')'
          ? this.#startCapture(s, p + 2, CAP_POSITION)
          : this.#startCapture(s, p + 1, CAP_UNFINISHED);
      }
      if (c === ')') return this.#endCapture(s, p + 1);
      if (c === '%' && pat[p + 1] === 'b') {
        s = this.#balance(s, p + 2);
        if (s === -1) return -1;
        p += 4;
        continue;
      }
      if (c === '%' && pat[p + 1] === 'f') {
        p += 2;
        if (this.#at(p) !== '[') throw new PatternError("missing '[' after '%f' in pattern");
        const ep = this.#classEnd(p);
        const previous = s === 0 ? 0 : this.#src.charCodeAt(s - 1);
        const current = s < this.#src.length ? this.#src.charCodeAt(s) : 0;
        if (this.#bracketClass(previous, p, ep - 1) || !this.#bracketClass(current, p, ep - 1)) {
          return -1;
        }
        p = ep;
        continue;
      }
      if (c === '%' && isDigit(pat.charCodeAt(p + 1))) {
        s = this.#backReference(s, pat.charCodeAt(p + 1));
        if (s === -1) return -1;
        p += 2;
        continue;
      }
      if (c === '$' && p + 1 === pat.length) return s === this.#src.length ? s : -1;
      const ep = this.#classEnd(p);
      const matched = this.#single(s, p, ep);
      switch (this.#at(ep)) {
        case '?': {
          if (matched) {
            const end = this.#doMatch(s + 1, ep + 1);
            if (end !== -1) return end;
          }
          p = ep + 1;
          continue;
        }
        case '*':
          return this.#maxExpand(s, p, ep);
        case '+':
          return matched ? this.#maxExpand(s + 1, p, ep) : -1;
        case '-':
          return this.#minExpand(s, p, ep);
        default:
          if (!matched) return -1;
          s++;
          p = ep;
      }
    }
  }

  #maxExpand(s: number, p: number, ep: number): number {
    let i = 0;
    while (this.#single(s + i, p, ep)) i++;
    for (; i >= 0; i--) {
      const end = this.#doMatch(s + i, ep + 1);
      if (end !== -1) return end;
    }
    return -1;
  }

  #minExpand(s: number, p: number, ep: number): number {
    for (;;) {
      const end = this.#doMatch(s, ep + 1);
      if (end !== -1) return end;
      if (!this.#single(s, p, ep)) return -1;
      s++;
    }
  }

  #startCapture(s: number, p: number, what: number): number {
    const level = this.#level;
    if (level >= MAX_CAPTURES) throw new PatternError('too many captures');
    this.#captures[level] = { init: s, len: what };
    this.#level = level + 1;
    const end = this.#doMatch(s, p);
    if (end === -1) this.#level--;
    return end;
  }

  #endCapture(s: number, p: number): number {
    let open = this.#level - 1;
    while (open >= 0 && (this.#captures[open] as Capture).len !== CAP_UNFINISHED) open--;
    if (open < 0) throw new PatternError('invalid pattern capture');
    const capture = this.#captures[open] as Capture;
    capture.len = s - capture.init;
    const end = this.#doMatch(s, p);
    if (end === -1) capture.len = CAP_UNFINISHED;
    return end;
  }

  #balance(s: number, p: number): number {
    if (p + 1 >= this.#pat.length) throw new PatternError('unbalanced pattern');
    const src = this.#src;
    if (s >= src.length || src[s] !== this.#pat[p]) return -1;
    const [open, close] = [this.#pat[p], this.#pat[p + 1]];
    let depth = 1;
    while (++s < src.length) {
      if (src[s] === close) {
        if (--depth === 0) return s + 1;
      } else if (src[s] === open) depth++;
    }
    return -1;
  }

  #backReference(s: number, digit: number): number {
    const index = digit - 49; // '1'
    const capture = this.#captures[index];
    if (index < 0 || index >= this.#level || !capture || capture.len === CAP_UNFINISHED) {
      throw new PatternError('invalid capture index');
    }
    const { init, len } = capture;
    // A position capture's length is negative: as a size_t, more than any string has.
    if (len < 0) return -1;
    if (this.#src.length - s >= len && this.#src.substr(init, len) === this.#src.substr(s, len)) {
      return s + len;
    }
    return -1;
  }
}
