import { CONNECT_WAIT_MS } from './connection.js';

/**
 * A sharded (un)subscribe's answer, or a failure after {@link CONNECT_WAIT_MS} without one;
 * `onSilence` runs then (the Cluster subscribers read the slot table again: a master that
 * does not answer may be gone, and another may serve its slots).
 */
export function answeredInTime(reply: Promise<unknown>, onSilence: () => void): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onSilence();
      reject(new Error(`no answer to a sharded subscribe within ${CONNECT_WAIT_MS} ms`));
    }, CONNECT_WAIT_MS);
    timer.unref();
  });
  return Promise.race([reply, timedOut]).finally(() => clearTimeout(timer));
}
