import { randomBytes, randomFillSync } from 'node:crypto';

const TOKEN_BYTES = 16;
/** Random bytes are drawn in blocks: one `getrandom` call per 256 tokens instead of per token. */
const pool = Buffer.alloc(TOKEN_BYTES * 256);
let offset = pool.length;
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** A token's characters, reused by every token (only the string made of them is kept). */
const codes: number[] = Array.from({ length: 22 }, () => 0);

/**
 * The 16 bytes of `bytes` from `at` in base64url (22 characters), exactly as
 * `Buffer#toString('base64url')` writes them, without its call into the runtime: the token
 * with its label took 3.9 µs of every acquire's path to its first request with that call,
 * 2.7–2.9 µs with this (one at a time on one node; bench/README.md, "The critical path").
 */
export function base64url16(bytes: Uint8Array, at: number): string {
  let c = 0;
  for (let i = at; i < at + 15; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    codes[c++] = BASE64URL.charCodeAt(n >>> 18);
    codes[c++] = BASE64URL.charCodeAt((n >>> 12) & 63);
    codes[c++] = BASE64URL.charCodeAt((n >>> 6) & 63);
    codes[c++] = BASE64URL.charCodeAt(n & 63);
  }
  const last = bytes[at + 15] ?? 0;
  codes[20] = BASE64URL.charCodeAt(last >>> 2);
  codes[21] = BASE64URL.charCodeAt((last & 3) << 4);
  return String.fromCharCode.apply(null, codes);
}

/** A fresh lock token: 128 random bits from the OS CSPRNG, in base64url. Never logged. */
export function newToken(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const token = base64url16(pool, offset);
  offset += TOKEN_BYTES;
  return token;
}

let lastOwner: string | undefined;
let lastEncoded = '';

/**
 * The token of one acquisition: a fresh token, and for an `owner`, its label after it:
 * `<token>.<ms since the epoch>.<owner, percent-encoded>`, and with a `size` (a semaphore's
 * permits) `<token>.<ms>p<size>.<owner>`. Scripts treat a token as opaque (a hold is
 * `<token>:<attempt>`; an encoded label has no `:`); only the inspecting scripts read the
 * label, and return it without the token. The time is when the acquisition began, in the
 * servers' time: this process's wall clock plus `clockOffsetMs` (see
 * `NodeIdentities.clockOffsetMs`; without it, this process's time).
 */
export function acquisitionToken(
  owner: string | undefined,
  size?: number,
  clockOffsetMs = 0,
): string {
  if (owner === undefined) return newToken();
  if (owner !== lastOwner) {
    lastEncoded = encodeURIComponent(owner);
    lastOwner = owner;
  }
  const of = size === undefined ? '' : `p${size}`;
  return `${newToken()}.${Math.round(Date.now() + clockOffsetMs)}${of}.${lastEncoded}`;
}

/**
 * An owner label as its holder gave it, from the percent-encoded form a hold stores; a form
 * no holder could have written (a value set by hand) is shown as stored.
 */
export function decodedOwner(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}

/** The owner label and start time that `token` carries, if any (see `acquisitionToken`). */
export function labelOf(token: string): { owner: string; since: Date } | undefined {
  const label = /^[\w-]+\.(\d+)(?:p\d+)?\.(.*)$/s.exec(token);
  if (!label) return undefined;
  return { owner: decodedOwner(label[2] ?? ''), since: new Date(Number(label[1])) };
}

/**
 * What a node stores for the hold that attempt `attempt` (1, 2...) of the acquisition with
 * `token` took: `<token>:<attempt>` (see `HOLD_VALUES`, which reads it in Lua).
 */
export function holdValue(token: string, attempt: number): string {
  return `${token}:${attempt}`;
}

/** A locker's id, which names its wake-up channel: 72 random bits, not a secret. */
export function newLockerId(): string {
  return randomBytes(9).toString('base64url');
}
