import { randomBytes, randomFillSync } from 'node:crypto';

const TOKEN_BYTES = 16;
/** Random bytes are drawn in blocks: one `getrandom` call per 256 tokens instead of per token. */
const pool = Buffer.alloc(TOKEN_BYTES * 256);
let offset = pool.length;

/** A fresh lock token: 128 random bits from the OS CSPRNG, in base64url. Never logged. */
export function newToken(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  // Buffer's own encoder: as fast as a loop in JavaScript once V8 optimizes both, and about
  // three times faster before it does (a process that locks a few times a second).
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
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
