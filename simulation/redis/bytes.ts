/**
 * Redis strings are bytes. The simulated node keeps them as byte strings: JS strings with one
 * char (0-255) per byte, so that comparing two of them compares bytes (as `memcmp` does) and
 * Lua's byte-wise string functions see what Redis's Lua sees. Text from and to the engine
 * crosses as UTF-8, as a client library sends and decodes it.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The UTF-8 bytes of `text`, as a byte string. */
export function bytesOf(text: string): string {
  return fromBytes(encoder.encode(text));
}

/** A byte string read as UTF-8 (invalid sequences become U+FFFD, as a client decodes them). */
export function textOf(bytes: string): string {
  return decoder.decode(toBytes(bytes));
}

/** A byte string from raw bytes. */
export function fromBytes(bytes: Uint8Array): string {
  let text = '';
  for (let start = 0; start < bytes.length; start += 8192) {
    text += String.fromCharCode(...bytes.subarray(start, start + 8192));
  }
  return text;
}

/** The raw bytes of a byte string. */
export function toBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}
