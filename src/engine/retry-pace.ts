import type { Attempt } from './attempt.js';
import type { LockContext } from './context.js';
import { sleep, type WaitStops } from './sleep.js';
import type { Waiter } from './waiter.js';
import type { PlaceInLine } from './waiting-line.js';

/**
 * How often to try again. A waiter in line that the locker's channel reaches is handed the
 * lock by the release and woken: it asks only to keep its place (and in case a message was
 * lost while a subscriber reconnected), 4 times per waiter timeout. Others poll every
 * `retryDelayMs`.
 */
export function pollingMs(
  context: Pick<LockContext, 'settings' | 'wakeUps'>,
  line: PlaceInLine | undefined,
): number {
  const { retryDelayMs } = context.settings;
  if (!line?.joined || !context.wakeUps.listening(line.key)) return retryDelayMs;
  return Math.max(retryDelayMs, line.waiterTimeoutMs / 4);
}

/** A random pause around `meanMs`, cut short by the holder's expiry and by the deadline. */
export function retryDelay(meanMs: number, attempt: Attempt, leftMs: number): number {
  const jittered = meanMs * (0.5 + Math.random());
  const holderMs =
    attempt.kind === 'busy' && attempt.holderRemainingMs !== undefined
      ? attempt.holderRemainingMs + 1
      : Number.POSITIVE_INFINITY;
  return Math.max(0, Math.min(jittered, holderMs, leftMs));
}

/** Pauses `delayMs`, or until a release is announced, or until a stop. */
export async function pause(
  delayMs: number,
  stops: WaitStops,
  waiter: Waiter | undefined,
): Promise<void> {
  const release = waiter?.nextRelease();
  try {
    await sleep(delayMs, stops, release?.wake);
  } finally {
    release?.cancel();
  }
}
