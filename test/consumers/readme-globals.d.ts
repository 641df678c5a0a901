// The names the README's fragments use without defining them: a fragment continues an
// earlier example (`locker`, `redis`) or calls the reader's own code (`buildReport`).
// Fragments are type-checked with these; blocks marked `<!-- example: runs -->` define
// everything themselves, since they are executed.
import type { Locker as DistlockLocker } from 'distlock';
import type { Redis as IORedis } from 'ioredis';

declare global {
  const Locker: typeof DistlockLocker;
  type Locker = DistlockLocker;
  const Redis: typeof IORedis;
  type Redis = IORedis;
  const locker: DistlockLocker;
  const redis: IORedis;
  const password: string;
  function buildReport(options: { for?: Date; signal: AbortSignal }): Promise<void>;
  function sumInvoices(options: { signal: AbortSignal }): Promise<number>;
  function sendDigest(): Promise<void>;
}
