import { AbortedError } from '../errors.js';

/**
 * Waits `ms`, or less if `wake` resolves first, or rejects with an {@link AbortedError} as soon
 * as `signal` aborts. The timer is unref'ed and cleared on every exit path.
 */
export function sleep(
  ms: number,
  signal: AbortSignal | undefined,
  what: string,
  wake?: Promise<void>,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError(what, signal.reason));
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      done();
      reject(new AbortedError(what, signal?.reason));
    };
    const timer = setTimeout(() => {
      done();
      resolve();
    }, ms);
    timer.unref();
    signal?.addEventListener('abort', onAbort, { once: true });
    wake?.then(() => {
      done();
      resolve();
    });
  });
}
