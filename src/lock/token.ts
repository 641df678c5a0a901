import { randomBytes } from 'node:crypto';

/** A fresh lock token: 128 random bits from the OS CSPRNG. Never logged. */
export function newToken(): string {
  return randomBytes(16).toString('base64url');
}
