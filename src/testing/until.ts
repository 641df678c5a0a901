import { setTimeout as delay } from 'node:timers/promises';

/** What one look at the nodes found: the awaited result, or why it is not there yet. */
export type Progress<T> = { readonly done: T } | { readonly reason: string };

const POLL_MS = 50;

/**
 * Runs `check` every 50 ms until it is done, and returns its result. An error thrown by
 * `check` counts as not done yet. After `timeoutMs` rejects with the last reason, so a
 * failing test says what never happened.
 */
export async function until<T>(
  what: string,
  check: () => Promise<Progress<T>>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await check().catch((error: unknown) => ({ reason: String(error) }));
    if ('done' in result) return result.done;
    if (Date.now() >= deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}: ${result.reason}`);
    }
    await delay(POLL_MS);
  }
}
