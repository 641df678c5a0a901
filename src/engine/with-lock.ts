import { LockLostError } from '../errors.js';
import type { Lock } from './lock.js';

/**
 * Runs `work` while `acquiring` resolves to a held (auto-extended) lock, then releases it
 * whatever happened. The work's own error wins over a loss and over a release the nodes
 * refused (which the `released` event still reports); a loss during successful work is
 * reported, because that work ran without the lock's protection for a while.
 */
export async function withLock<T>(
  acquiring: Promise<Lock>,
  work: (signal: AbortSignal) => Promise<T> | T,
): Promise<T> {
  const lock = await acquiring;
  const { signal } = lock;
  let result: T;
  try {
    result = await work(signal);
  } catch (error) {
    await lock.release().catch(() => undefined); // reported by the `released` event
    throw error;
  }
  await lock.release();
  if (signal.aborted && signal.reason instanceof LockLostError) throw signal.reason;
  return result;
}
