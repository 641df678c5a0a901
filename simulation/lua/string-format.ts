/**
 * `string.format` for the formats compiled scripts may use: `%d`, `%i`, `%s` and `%%`, without
 * flags, width or precision, as 5.1's `str_format` hands them to `sprintf`. The compiler takes
 * only a literal format made of these (see expressions.ts); any other is left to the VM.
 */

/** The conversions {@link formatString} writes. */
export const FORMAT_CONVERSIONS = new Set(['d', 'i', 's', '%']);

/** Reads the arguments as 5.1's checks do, raising its errors. */
export interface FormatArguments {
  /** How many arguments there are, the format included. */
  readonly count: number;
  text(n: number): string;
  number(n: number): number;
  /** 5.1's `bad argument #n to 'format' (no value)`. */
  missing(n: number): unknown;
}

/** `(long)` of a double, as `sprintf("%ld", (long)x)` gets it. */
function toLong(value: number): bigint {
  if (Number.isNaN(value) || value >= 2 ** 63 || value < -(2 ** 63)) return -(2n ** 63n);
  return BigInt(Math.trunc(value));
}

/** Formats `format` (made of {@link FORMAT_CONVERSIONS} only) with the arguments after it. */
export function formatString(format: string, read: FormatArguments): string {
  let out = '';
  let argument = 1;
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c !== '%') {
      out += c;
      continue;
    }
    const conversion = format[++i];
    if (conversion === '%') {
      out += '%';
      continue;
    }
    if (++argument > read.count) throw read.missing(argument);
    if (conversion === 's') {
      const text = read.text(argument);
      // Added whole when long; else through sprintf, which stops at a NUL.
      const nul = text.length >= 100 ? -1 : text.indexOf('\0');
      out += nul === -1 ? text : text.slice(0, nul);
    } else out += toLong(read.number(argument)).toString();
  }
  return out;
}
