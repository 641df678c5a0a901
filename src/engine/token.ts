import { randomBytes, randomFillSync } from 'node:crypto';

/** A token's length: 22 base64url characters, each 6 random bits (132 bits in all). */
const TOKEN_CHARS = 22;
/** Random bytes are drawn in blocks: one `getrandom` call per 256 tokens instead of per token. */
const pool = Buffer.alloc(TOKEN_CHARS * 256);
let offset = pool.length;
/** The base64url alphabet: a random byte's low 6 bits pick one character (256 = 4 × 64). */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function charOf(byte: number | undefined): number {
  return ALPHABET.charCodeAt((byte ?? 0) & 63);
}

/**
 * A fresh lock token: 22 base64url characters, 132 random bits from the OS CSPRNG. Never
 * logged. Built from the pool's bytes in one `String.fromCharCode` call rather than by
 * `Buffer#toString('base64url')` per token, a call into the runtime that took about 2 µs
 * of every acquire's path to its first request (one at a time on one node).
 */
export function newToken(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const o = offset;
  offset += TOKEN_CHARS;
  const p = pool;
  // biome-ignore format: one character per random byte, 22 in all
  return String.fromCharCode(
    charOf(p[o]), charOf(p[o + 1]), charOf(p[o + 2]), charOf(p[o + 3]), charOf(p[o + 4]),
    charOf(p[o + 5]), charOf(p[o + 6]), charOf(p[o + 7]), charOf(p[o + 8]), charOf(p[o + 9]),
    charOf(p[o + 10]), charOf(p[o + 11]), charOf(p[o + 12]), charOf(p[o + 13]),
    charOf(p[o + 14]), charOf(p[o + 15]), charOf(p[o + 16]), charOf(p[o + 17]),
    charOf(p[o + 18]), charOf(p[o + 19]), charOf(p[o + 20]), charOf(p[o + 21]),
  );
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
