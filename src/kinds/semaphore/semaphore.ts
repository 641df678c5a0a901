import { Acquirer, type HoldOptions } from '../../engine/acquirer.js';
import type { LockContext } from '../../engine/context.js';
import type { Lock } from '../../engine/lock.js';
import { permitKey } from '../../keys.js';
import { semaphoreKind } from './semaphore-kind.js';

/** Options of {@link Locker.semaphore}. */
export interface SemaphoreOptions {
  /** How many holders the semaphore admits at once; every client must give the same. */
  permits: number;
}

/** Options of a permit: those of a lock, without fencing (several hold permits at once). */
export type PermitOptions = HoldOptions;

/**
 * A counting semaphore: up to `permits` holders at once. Each permit is a {@link Lock}
 * handle of its own (its signal, `remainingMs`, `extend`, `release`) and expires on its own
 * at its TTL, so a crashed holder's permit frees itself. On N nodes a permit counts only
 * when more than `permits`/(`permits` + 1) of the nodes granted it (see docs/semaphore.md).
 * Every client of one semaphore must give the same `permits`.
 *
 * @example
 * ```ts
 * const pool = locker.semaphore('db-pool', { permits: 3 });
 * const permit = await pool.acquire({ ttlMs: 10_000 });
 * try {
 *   // ... at most 3 processes run this at once
 * } finally {
 *   await permit.release();
 * }
 * ```
 */
export class Semaphore {
  /** The semaphore's name, as given to `locker.semaphore`. */
  readonly name: string;
  /** How many holders it admits at once. */
  readonly permits: number;
  readonly #permits: Acquirer;

  /** @internal Created by `Locker.semaphore`; not part of the public API. */
  constructor(context: LockContext, name: string, permits: number) {
    this.name = name;
    this.permits = permits;
    const key = permitKey(context.settings.prefix, name);
    const target = { kind: semaphoreKind(permits), resource: name, key };
    this.#permits = new Acquirer(context, target, { owner: 'Semaphore', withLock: 'withPermit' });
  }

  /**
   * Acquires a permit, waiting up to `waitMs` for one to free up. Rejects as
   * `Locker.acquire` does (`AcquireTimeoutError`, `NoQuorumError`, `AbortedError`...).
   */
  acquire(options: PermitOptions): Promise<Lock> {
    return this.#permits.acquire(options);
  }

  /** One attempt: the permit, or `null` when all permits are held. */
  tryAcquire(options: Omit<PermitOptions, 'waitMs'>): Promise<Lock | null> {
    return this.#permits.tryAcquire(options);
  }

  /** Runs `work` under a permit, auto-extended, and always gives it back. */
  withPermit<T>(options: PermitOptions, work: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
    return this.#permits.withLock(options, work);
  }
}
