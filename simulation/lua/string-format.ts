/**
 * `string.format` for the conversions compiled scripts may use: `%d %i %u %c %x %X %o %s %%`,
 * with C's flags, width and precision, as 5.1's `str_format` hands them to `sprintf`. The
 * floating-point conversions are left to the interpreter: the compiler refuses a format it
 * cannot read here (see compile.ts).
 */

/** The conversions {@link formatString} writes. */
export const FORMAT_CONVERSIONS = new Set(['d', 'i', 'u', 'c', 'x', 'X', 'o', 's', '%']);

const FLAGS = '-+ #0';

/** Reads the arguments as 5.1's checks do, raising its errors. */
export interface FormatArguments {
  text(n: number): string;
  number(n: number): number;
  invalid(message: string): unknown;
}

/** `(long)` of a double, as `sprintf("%ld", (long)x)` gets it. */
function toLong(value: number): bigint {
  if (Number.isNaN(value) || value >= 2 ** 63 || value < -(2 ** 63)) return -(2n ** 63n);
  return BigInt(Math.trunc(value));
}

function pad(body: string, flags: string, width: number, numeric: boolean): string {
  if (body.length >= width) return body;
  if (flags.includes('-')) return body.padEnd(width);
  if (numeric && flags.includes('0')) {
    const sign = /^[+\- ]/.test(body) ? (body[0] as string) : '';
    return sign + body.slice(sign.length).padStart(width - sign.length, '0');
  }
  return body.padStart(width);
}

/** Formats `format` with `args` from the second on. */
export function formatString(_args: unknown[], format: string, read: FormatArguments): string {
  let out = '';
  let argument = 1;
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c !== '%') {
      out += c;
      continue;
    }
    if (format[++i] === '%') {
      out += '%';
      continue;
    }
    const spec = /^([-+ #0]*)(\d{0,2})(?:\.(\d{0,2}))?/.exec(format.slice(i)) as RegExpExecArray;
    const [whole, flags = '', widthText = '', precisionText] = spec;
    if (flags.length >= FLAGS.length + 1) throw read.invalid('invalid format (repeated flags)');
    i += whole.length;
    if (/\d/.test(format[i] ?? ''))
      throw read.invalid('invalid format (width or precision too long)');
    const conversion = format[i] ?? '';
    const width = Number(widthText || 0);
    const precision = precisionText === undefined ? undefined : Number(precisionText || 0);
    argument++;
    out += convert(conversion, argument, flags, width, precision, read);
  }
  return out;
}

function convert(
  conversion: string,
  n: number,
  flags: string,
  width: number,
  precision: number | undefined,
  read: FormatArguments,
): string {
  switch (conversion) {
    case 'd':
    case 'i': {
      const value = toLong(read.number(n));
      let digits = (value < 0n ? -value : value).toString();
      if (precision !== undefined)
        digits = precision === 0 && value === 0n ? '' : digits.padStart(precision, '0');
      const sign = value < 0n ? '-' : flags.includes('+') ? '+' : flags.includes(' ') ? ' ' : '';
      return pad(
        sign + digits,
        precision === undefined ? flags : flags.replace('0', ''),
        width,
        true,
      );
    }
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      const value = BigInt.asUintN(64, toLong(read.number(n)));
      const radix = conversion === 'o' ? 8 : conversion === 'u' ? 10 : 16;
      let digits = value.toString(radix);
      if (conversion === 'X') digits = digits.toUpperCase();
      if (precision !== undefined)
        digits = precision === 0 && value === 0n ? '' : digits.padStart(precision, '0');
      if (flags.includes('#') && value !== 0n && conversion !== 'u') {
        digits = conversion === 'o' ? `0${digits}` : `0${conversion}${digits}`;
      }
      return pad(digits, precision === undefined ? flags : flags.replace('0', ''), width, true);
    }
    case 'c':
      return pad(
        String.fromCharCode(Number(BigInt.asUintN(8, toLong(read.number(n))))),
        flags,
        width,
        false,
      );
    case 's': {
      const text = read.text(n);
      if (precision === undefined && text.length >= 100) return text; // added whole, unpadded
      const nul = text.indexOf('\0');
      const cut = nul === -1 ? text : text.slice(0, nul); // sprintf stops at a NUL
      return pad(precision === undefined ? cut : cut.slice(0, precision), flags, width, false);
    }
    default:
      throw read.invalid(`invalid option '%${conversion}' to 'format'`);
  }
}
