/**
 * Redis strings are bytes. The simulated node keeps them as byte strings: JS strings with one
 * char (0-255) per byte, so that comparing two of them compares bytes (as `memcmp` does) and
 * Lua's byte-wise string functions see what Redis's Lua sees. Text from and to the engine
 * crosses as UTF-8, as a client library sends and decodes it.
 */

/** Not ASCII (ASCII is the same as text and as bytes: most of what crosses skips the Buffer). */
const NON_ASCII = /[\u0080-\uffff]/;

/** The UTF-8 bytes of `text`, as a byte string. */
export function bytesOf(text: string): string {
  return NON_ASCII.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text;
}

/** A byte string read as UTF-8 (invalid sequences become U+FFFD, as a client decodes them). */
export function textOf(bytes: string): string {
  return NON_ASCII.test(bytes) ? Buffer.from(bytes, 'latin1').toString('utf8') : bytes;
}

/** A byte string from raw bytes. */
export function fromBytes(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

/** The raw bytes of a byte string. */
export function toBytes(text: string): Uint8Array {
  return Buffer.from(text, 'latin1');
}
