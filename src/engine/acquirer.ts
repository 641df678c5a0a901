import { type AcquireCall, acquireSettings } from '../config/acquire-settings.js';
import type { AcquireOptions } from '../config/options.js';
import { InvalidArgumentError, LockBusyError } from '../errors.js';
import { acquireLock } from './acquire.js';
import type { LockContext } from './context.js';
import type { HoldTarget } from './contract.js';
import type { Lock } from './lock.js';
import { withLock } from './with-lock.js';

/** Options of a hold that has no fencing token (a permit, a read or a write hold). */
export type HoldOptions = Omit<AcquireOptions, 'fencing'>;

/** How users reach an {@link Acquirer}'s methods, for messages: `Semaphore.withPermit`. */
export interface CalledAs {
  /** What holds the acquirer: `Semaphore`, `ReadWriteLock.read`. */
  readonly owner: string;
  /** The public name of `withLock`, when it has another. */
  readonly withLock?: string;
}

/**
 * Acquires one kind of hold on one resource: a semaphore's permits, a read-write lock's
 * read or write side. Each hold is a {@link Lock} handle of its own.
 */
export class Acquirer {
  readonly #context: LockContext;
  readonly #target: HoldTarget;
  readonly #calledAs: CalledAs;

  /** @internal Created by `Locker.semaphore` and `Locker.readWriteLock`. */
  constructor(context: LockContext, target: HoldTarget, calledAs: CalledAs) {
    this.#context = context;
    this.#target = target;
    this.#calledAs = calledAs;
  }

  /**
   * Acquires, waiting up to `waitMs`. Rejects as `Locker.acquire` does
   * (`AcquireTimeoutError`, `NoQuorumError`, `AbortedError`...).
   */
  acquire(options: HoldOptions): Promise<Lock> {
    return acquireLock(this.#context, this.#target, this.#settings(options, 'acquire'));
  }

  /** One attempt: the hold, or `null` when others hold what it needs. */
  tryAcquire(options: Omit<HoldOptions, 'waitMs'>): Promise<Lock | null> {
    const settings = this.#settings(options, 'tryAcquire');
    return acquireLock(this.#context, this.#target, settings).catch((error: unknown) => {
      if (error instanceof LockBusyError) return null;
      throw error;
    });
  }

  /** Runs `work` under the hold, auto-extended, and always releases it; as `Locker.withLock`. */
  withLock<T>(options: HoldOptions, work: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
    if (typeof work !== 'function') throw new InvalidArgumentError('work', 'a function', work);
    const settings = this.#settings(options, 'withLock');
    return withLock(acquireLock(this.#context, this.#target, settings), work);
  }

  #settings(options: unknown, method: AcquireCall['method']) {
    const { noun } = this.#target.kind;
    const lacks = { fencing: `a ${noun} has no fencing token (use a lock for fenced writes)` };
    const { owner, withLock = 'withLock' } = this.#calledAs;
    const name = `${owner}.${method === 'withLock' ? withLock : method}`;
    const call = { method, name, lacks };
    return acquireSettings(this.#target.resource, options, this.#context.settings, call);
  }
}
