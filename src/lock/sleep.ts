import { AbortedError } from '../errors.js';

/**
 * Waits `ms`, or rejects with an {@link AbortedError} as soon as `signal` aborts. The timer is
 * unref'ed and cleared on every exit path.
 */
export function sleep(ms: number, signal: AbortSignal | undefined, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError(what, signal.reason));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError(what, signal?.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
