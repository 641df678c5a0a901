import { AbortedError, type LockError, LockerClosedError } from '../errors.js';

/** What stops a wait early, with an error: the caller's signal, or the locker closing. */
export interface WaitStops {
  /** What is waiting, for the error message: `Acquiring "job"`. */
  readonly what: string;
  readonly signal: AbortSignal | undefined;
  readonly closed: AbortSignal;
}

/** The error for a wait that must stop now, if it must. */
export function stopped({ what, signal, closed }: WaitStops): LockError | undefined {
  if (closed.aborted) return new LockerClosedError(what);
  if (signal?.aborted) return new AbortedError(what, signal.reason);
  return undefined;
}

/**
 * Waits `ms`, or less if `wake` resolves first, or rejects as soon as the caller's signal
 * aborts ({@link AbortedError}) or the locker closes ({@link LockerClosedError}). The timer is
 * unref'ed, and it and the listeners are removed on every exit path.
 */
export function sleep(ms: number, stops: WaitStops, wake?: Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    const early = stopped(stops);
    if (early) return reject(early);
    const { signal, closed } = stops;
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onStop);
      closed.removeEventListener('abort', onStop);
    };
    const onStop = () => {
      done();
      reject(stopped(stops));
    };
    const timer = setTimeout(() => {
      done();
      resolve();
    }, ms);
    timer.unref();
    signal?.addEventListener('abort', onStop, { once: true });
    closed.addEventListener('abort', onStop, { once: true });
    wake?.then(() => {
      done();
      resolve();
    });
  });
}
