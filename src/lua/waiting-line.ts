/**
 * The waiting line's vocabulary, shared by every kind's scripts: a waiter's place, and how it
 * travels in ARGV. The line itself is Lua (`WAITING_LINE` in fragments.ts).
 */

/**
 * How long after the lock last went to the front of its line a release may still leave it
 * free for anyone, rather than hand it over, while no fair waiter joined the line (see
 * `LOCK_LINE`). A woken waiter that finds the lock taken back asks again once this is over.
 */
export const BARGE_WINDOW_MS = 10;

/** A waiter's place in a line, as the line's scripts need it. */
export interface WaitingPlace {
  /** The caller's place in line (its arrival order), the same on every node. */
  readonly ticket: number;
  /** How long a waiter that stopped asking keeps its place (ms). */
  readonly waiterTimeoutMs: number;
  /**
   * How the waiter's locker hears that it was handed the lock: the publishing command and the
   * channel, `PUBLISH <channel>` or (Redis Cluster) `SPUBLISH <channel>` (see `WakeUps.wakeFor`).
   */
  readonly wakeChannel: string;
}

/** A waiter's place as the script arguments ARGV ticket, patience, channel: empty when none. */
export function placeArgs(line: WaitingPlace | undefined): (string | number)[] {
  return [line?.ticket ?? '', line?.waiterTimeoutMs ?? 0, line?.wakeChannel ?? ''];
}

/** A place in the waiting line of one acquisition, the same on every node. */
export interface LineTicket extends WaitingPlace {
  /** Fair: take a free lock only when first in line. Otherwise a free lock is anyone's. */
  readonly fair: boolean;
}
