/**
 * The oracle of the waiting line (docs/holding.md, "Hand-off" and "Fair acquisition"), for a
 * schedule without faults, where every request arrives within a known delay: each node then
 * has a waiter in line from its first refused attempt until it is served or gives up, and
 * the promises can be checked from what the clients saw.
 *
 * - **Fair order.** No acquisition takes the lock ahead of a fair waiter that joined the line
 *   before it (an earlier ticket: tickets follow the order of the `acquire` calls). The one
 *   exception is documented: a plain acquisition's first request may take a lock that is free
 *   (its `SET NX`, or its first try in line right after it), as a newcomer that never waited;
 *   a lock is free while a fair waiter waits only when a hold ran out or a hand-over was not
 *   confirmed in time. A hand-over not yet confirmed is the waiter's: nobody else takes it.
 * - **Bounded barging.** Once a waiter is first in line (every earlier acquisition ended),
 *   the first release that comes more than the barging window after that hands the lock to
 *   it: nobody else holds the lock from then until that waiter does. That is "the window
 *   plus one hold": the hold that a release within the window let someone take.
 *
 * Times are as the clients saw them; `slackMs` covers how much later than a node a client
 * learns something (the requests and replies between them).
 */
import type { Holding } from './oracle.js';

/** One acquisition of a lock that may wait in its line, as its client saw it. */
export interface Wait {
  readonly client: number;
  readonly resource: string;
  /** When `acquire` was called, in call order across clients: the order of line tickets. */
  readonly order: number;
  readonly fair: boolean;
  /** When it gives up: its start plus `waitMs`. */
  readonly deadline: number;
  /** When an attempt was first refused: from then on it is in line on every node. */
  refusedAt?: number;
  /** When `acquire` resolved with the lock, and after how many attempts. */
  grantedAt?: number;
  attempts?: number;
  /** When `acquire` settled, granted or not. */
  endedAt?: number;
}

export interface LineOrderBounds {
  /** The barging window (ms; `BARGE_WINDOW_MS`). */
  readonly windowMs: number;
  /** The most a client can learn of a node's state later than the node (ms). */
  readonly slackMs: number;
}

/** What breaks fair order or bounded barging in the waits and holdings of one schedule. */
export function lineOrderViolations(
  waits: readonly Wait[],
  holdings: readonly Holding[],
  bounds: LineOrderBounds,
): string[] {
  return [...unfairTakes(waits, bounds), ...unboundedBarging(waits, holdings, bounds)];
}

/** Acquisitions that took the lock ahead of a fair waiter with an earlier ticket. */
function unfairTakes(waits: readonly Wait[], { slackMs }: LineOrderBounds): string[] {
  const found: string[] = [];
  for (const taker of waits) {
    const at = taker.grantedAt;
    if (at === undefined) continue;
    // A plain newcomer's first attempt may take a free lock.
    if (!taker.fair && (taker.attempts ?? 1) <= 1) continue;
    for (const fair of waits) {
      if (!fair.fair || fair.resource !== taker.resource || fair.order >= taker.order) continue;
      const waiting =
        fair.refusedAt !== undefined &&
        fair.refusedAt + slackMs < at &&
        fair.deadline > at &&
        (fair.grantedAt ?? Number.POSITIVE_INFINITY) > at;
      if (waiting) {
        found.push(
          `${taker.resource}: c${taker.client} (ticket ${taker.order}, attempt ${taker.attempts}) took the lock at ${at.toFixed(3)} ahead of fair c${fair.client} (ticket ${fair.order}), in line since ${fair.refusedAt?.toFixed(3)}`,
        );
      }
    }
  }
  return found;
}

/** Holdings by others after a release that should have handed the lock to the front. */
function unboundedBarging(
  waits: readonly Wait[],
  holdings: readonly Holding[],
  { windowMs, slackMs }: LineOrderBounds,
): string[] {
  const found: string[] = [];
  for (const front of waits) {
    if (front.refusedAt === undefined || front.endedAt === undefined) continue;
    const earlier = waits.filter((w) => w.resource === front.resource && w.order < front.order);
    if (earlier.some((w) => w.endedAt === undefined)) continue;
    // First in line once it is in line and every earlier acquisition ended.
    const firstAt = Math.max(front.refusedAt, ...earlier.map((w) => w.endedAt as number));
    const others = holdings.filter(
      (h) => h.resource === front.resource && h.client !== front.client,
    );
    const handingOver = others
      .filter((h) => h.releasedAt !== undefined && h.releasedAt >= firstAt + windowMs)
      .sort((a, b) => (a.releasedAt as number) - (b.releasedAt as number))[0];
    const handedAt = handingOver?.releasedAt;
    if (handedAt === undefined || front.deadline <= handedAt + slackMs) continue;
    const servedAt = front.grantedAt ?? front.deadline;
    for (const barger of others) {
      if (barger.from > handedAt + slackMs && barger.from < servedAt) {
        found.push(
          `${front.resource}: c${barger.client} took the lock at ${barger.from.toFixed(3)} while c${front.client} was first in line (since ${firstAt.toFixed(3)}), after c${handingOver?.client}'s release at ${handedAt.toFixed(3)}, past the ${windowMs} ms window`,
        );
      }
    }
  }
  return found;
}
