import { AsyncLocalStorage } from 'node:async_hooks';
import type { Lock } from '../engine/lock.js';

const holding = new AsyncLocalStorage<Lock>();

/** Runs `work` with `lock` as the lock {@link heldLock} returns inside it. */
export function runHolding<T>(lock: Lock, work: () => T): T {
  return holding.run(lock, work);
}

/**
 * The lock of the `@Locked()` or `@OncePerTick()` method running now (the innermost, when they
 * nest): its `signal` (abort the work when it fires), `fence`, `remainingMs()`. Throws outside
 * such a method.
 *
 * @example
 * ```ts
 * @Locked('invoice', { ttlMs: 10_000, fencing: true })
 * async bill() {
 *   const { signal, fence } = heldLock();
 *   await store.write(invoice, { fence, signal });
 * }
 * ```
 */
export function heldLock(): Lock {
  const lock = holding.getStore();
  if (!lock) {
    throw new Error('heldLock() is called outside a method decorated with @Locked or @OncePerTick');
  }
  return lock;
}
