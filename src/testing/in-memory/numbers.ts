/**
 * Numbers as Redis 7.0 and its Lua 5.1 read and write them, on byte strings (one char per
 * byte): `string2ll` (integers), glibc's `strtod` (scores, Lua's `tonumber`), and C's `%.17g`
 * and `%.14g` (scores in replies, Lua's `tostring`), with exact rounding (half to even).
 */

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Redis's `string2ll`: an optional `-`, no leading zeros, no spaces, within 64 bits. */
export function parseLongLong(text: string): bigint | undefined {
  if (text.length === 0 || text.length >= 21) return undefined;
  if (!/^(0|-?[1-9][0-9]*)$/.test(text)) return undefined;
  const value = BigInt(text);
  return value < INT64_MIN || value > INT64_MAX ? undefined : value;
}

/** Whether `value` fits a C `long long`. */
export function fitsLongLong(value: bigint): boolean {
  return value >= INT64_MIN && value <= INT64_MAX;
}

/** What glibc's `strtod` reads at the start of `text`. */
export interface Strtod {
  readonly value: number;
  /** Characters read; 0 when no number was found. */
  readonly length: number;
  /** `errno == ERANGE` with an infinite or zero result: overflow, or underflow to zero. */
  readonly outOfRange: boolean;
}

const SPACE = /^[ \t\n\v\f\r]*/;
const PLAIN_INTEGER = /^-?[0-9]{1,16}$/;
const SPECIAL = /^([+-]?)(?:(inf(?:inity)?)|(nan(?:\([0-9A-Za-z_]*\))?))/i;
const HEX = /^([+-]?)0x([0-9a-f]*)(?:\.([0-9a-f]*))?(?:p([+-]?[0-9]+))?/i;
const DECIMAL = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?/i;

/** glibc's `strtod` on `text` (leading white space skipped, as it does). */
export function strtod(text: string): Strtod {
  // Most numbers read are plain integers (times, TTLs, tickets, below 2^53: exact as JS
  // reads them) and the `-inf` of a score range.
  if (PLAIN_INTEGER.test(text)) {
    const value = Number(text);
    if (Number.isSafeInteger(value)) return { value, length: text.length, outOfRange: false };
  }
  if (text === '-inf') return { value: Number.NEGATIVE_INFINITY, length: 4, outOfRange: false };
  const skipped = SPACE.exec(text)?.[0].length ?? 0;
  const rest = text.slice(skipped);
  const special = SPECIAL.exec(rest);
  if (special) {
    const value = special[2] ? Number.POSITIVE_INFINITY : Number.NaN;
    const signed = special[1] === '-' ? -value : value;
    return { value: signed, length: skipped + special[0].length, outOfRange: false };
  }
  const hex = HEX.exec(rest);
  if (hex && `${hex[2]}${hex[3] ?? ''}`.length > 0) {
    const digits = `${hex[2]}${hex[3] ?? ''}`;
    const exponent = Number(hex[4] ?? 0) - 4 * (hex[3]?.length ?? 0);
    const magnitude = Number(BigInt(`0x${digits}`)) * 2 ** exponent;
    const value = hex[1] === '-' ? -magnitude : magnitude;
    return { value, length: skipped + hex[0].length, outOfRange: !Number.isFinite(value) };
  }
  const decimal = DECIMAL.exec(rest);
  if (!decimal) return { value: 0, length: 0, outOfRange: false };
  const value = Number(decimal[0]);
  const nonZero = /[1-9]/.test(decimal[0].split(/e/i)[0] ?? '');
  const outOfRange = !Number.isFinite(value) || (value === 0 && nonZero);
  return { value, length: skipped + decimal[0].length, outOfRange };
}

/** Redis's `getDoubleFromObject` (ZADD scores): the whole text, no leading space, no NaN. */
export function parseScore(text: string): number | undefined {
  if (text.length === 0 || /^[ \t\n\v\f\r]/.test(text)) return undefined;
  const read = strtod(text);
  if (read.length !== text.length || read.outOfRange || Number.isNaN(read.value)) return undefined;
  return read.value;
}

/** One end of a score range (`zslParseRange`): `(` for exclusive; strtod up to a NUL. */
export function parseScoreBound(text: string): { value: number; exclusive: boolean } | undefined {
  const exclusive = text.startsWith('(');
  const body = exclusive ? text.slice(1) : text;
  const read = strtod(body);
  const next = body.charAt(read.length);
  if ((next !== '' && next !== '\0') || Number.isNaN(read.value)) return undefined;
  return { value: read.value, exclusive };
}

/**
 * Lua 5.1's `luaO_str2d`, as `tonumber` and arithmetic on strings use it: strtod, then only
 * white space up to the end (a NUL ends a C string).
 */
export function luaStringToNumber(text: string): number | undefined {
  const end = text.indexOf('\0');
  const body = end === -1 ? text : text.slice(0, end);
  const read = strtod(body);
  if (read.length === 0) return undefined;
  return /^[ \t\n\v\f\r]*$/.test(body.slice(read.length)) ? read.value : undefined;
}

/** C's `%.<precision>g` of a double, rounded exactly (glibc: half to even). */
export function formatG(value: number, precision: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  // An integer below 2^53 with fewer digits than the precision: JS writes it the same.
  if (Number.isSafeInteger(value) && Math.abs(value) < 10 ** precision) return String(value);
  const sign = value < 0 ? '-' : '';
  const { digits, exponent } = roundedDigits(Math.abs(value), precision);
  if (exponent < -4 || exponent >= precision) {
    const mantissa = trimZeros(`${digits[0]}.${digits.slice(1)}`);
    const power = Math.abs(exponent).toString().padStart(2, '0');
    return `${sign}${mantissa}e${exponent < 0 ? '-' : '+'}${power}`;
  }
  if (exponent < 0) return `${sign}${trimZeros(`0.${'0'.repeat(-exponent - 1)}${digits}`)}`;
  const whole = digits.slice(0, exponent + 1);
  return `${sign}${trimZeros(`${whole}.${digits.slice(exponent + 1)}`)}`;
}

/** `%.17g`: how Redis 7.0 writes a score, and a Lua number it is given as an argument. */
export function formatDouble(value: number): string {
  return formatG(value, 17);
}

function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

/** The first `precision` significant digits of `value` > 0, and the decimal exponent. */
function roundedDigits(value: number, precision: number): { digits: string; exponent: number } {
  const [numerator, denominator] = exactFraction(value);
  let exponent = numerator.toString().length - denominator.toString().length;
  if (scaled(numerator, denominator, exponent) < 1n) exponent -= 1; // leading digit below 1
  const shift = precision - 1 - exponent;
  const top = shift >= 0 ? numerator * 10n ** BigInt(shift) : numerator;
  const bottom = shift >= 0 ? denominator : denominator * 10n ** BigInt(-shift);
  let quotient = top / bottom;
  const twice = (top % bottom) * 2n;
  if (twice > bottom || (twice === bottom && quotient % 2n === 1n)) quotient += 1n;
  let digits = quotient.toString();
  if (digits.length > precision) {
    digits = digits.slice(0, precision);
    exponent += 1;
  }
  return { digits, exponent };
}

function scaled(numerator: bigint, denominator: bigint, exponent: number): bigint {
  return exponent >= 0
    ? numerator / (denominator * 10n ** BigInt(exponent))
    : (numerator * 10n ** BigInt(-exponent)) / denominator;
}

/** `value` (finite, > 0) as an exact fraction of integers. */
function exactFraction(value: number): [bigint, bigint] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = (biased === 0 ? 1 : biased) - 1075;
  return exponent >= 0 ? [mantissa << BigInt(exponent), 1n] : [mantissa, 1n << BigInt(-exponent)];
}

/** C's `(long long)` cast on x86-64: truncation; NaN and out of range give INT64_MIN. */
export function toLongLong(value: number): bigint {
  if (Number.isNaN(value) || value >= 2 ** 63 || value < -(2 ** 63)) return INT64_MIN;
  return BigInt(Math.trunc(value));
}
