import { randomBytes, randomFillSync } from 'node:crypto';

const TOKEN_BYTES = 16;
/** Random bytes are drawn in blocks: one `getrandom` call per 256 tokens instead of per token. */
const pool = Buffer.alloc(TOKEN_BYTES * 256);
let offset = pool.length;

/** A fresh lock token: 128 random bits from the OS CSPRNG. Never logged. */
export function newToken(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const token = pool.toString('base64url', offset, offset + TOKEN_BYTES);
  offset += TOKEN_BYTES;
  return token;
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
