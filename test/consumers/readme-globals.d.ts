// The names the README's fragments use without defining them: a fragment continues an
// earlier example (`locker`, `redis`) or calls the reader's own code (`buildReport`).
// Fragments are type-checked with these; blocks marked `<!-- example: runs -->` define
// everything themselves, since they are executed.
// Only values are declared here, never a class or a function of distlock: a block that uses
// `Locker` must import it, as a reader copying it would have to.
import type { Locker } from 'distlock';
import type { Redis } from 'ioredis';

declare global {
  const locker: Locker;
  const redis: Redis;
  const password: string;
  function buildReport(options: { for?: Date; signal: AbortSignal }): Promise<void>;
  function sumInvoices(options: { signal: AbortSignal }): Promise<number>;
  function sendDigest(): Promise<void>;
  function runScheduler(options: { signal: AbortSignal; term: bigint }): Promise<void>;
}
