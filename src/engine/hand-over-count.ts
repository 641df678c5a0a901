import type { AcquireSettings } from '../config/acquire-settings.js';
import { validityMs } from '../quorum/validity.js';
import type { Attempt } from './attempt.js';
import type { LockContext } from './context.js';
import type { HoldTarget } from './contract.js';
import type { HandOver } from './ticket-watch.js';

/** What was true of the node when the acquisition's last attempt was sent to it. */
interface SentAttempt {
  /** 0 before the first attempt. */
  attempt: number;
  startedAt: number;
  /** The command connection's generation (see `StallGuard.generation`). */
  generation: number;
  /** The subscriber's (see `WakeUps.readiness`). */
  readiness: number;
  /** Whether the node answered it with a refusal (and so nothing of ours was undone there). */
  refused: boolean;
}

/**
 * Whether an acquisition may hold a lock from the message of the release that handed it over,
 * with no confirming request (DESIGN.md, "Count the hand-over from the message"). Only where
 * that needs nothing a confirmation would bring: a lock (the one kind whose line remembers an
 * attempt), one node that is not a Redis Cluster and reports its reconnects, no fencing token
 * to draw, no replica acknowledgement to wait for.
 */
export function countsHandOvers(
  context: LockContext,
  target: HoldTarget,
  settings: AcquireSettings,
): boolean {
  const node = context.nodes.length === 1 ? context.nodes[0] : undefined;
  return (
    target.kind.countsHandOvers === true &&
    node !== undefined &&
    node.reportsReconnects &&
    !node.isCluster &&
    !settings.fencing &&
    context.settings.replicaAcks === 0
  );
}

/**
 * One acquisition's record of its last attempt, for counting a hand-over from its message.
 * The node set the key for the waiter's TTL when it handed it over, after it had put the
 * attempt named in the message in line: so the key outlives (that attempt's send time + TTL),
 * and the validity counts from that send time, exactly as if the attempt had taken the lock.
 * The message counts only when all of this holds; otherwise the waiter confirms as before:
 * - it names the acquisition's last attempt, which the node refused (an earlier attempt may
 *   have been followed by the undo of a later one, which would have deleted the hand-over);
 * - neither the node's command connection nor its subscriber was re-established since that
 *   attempt was sent (a restarted server, or another one behind the same address, cannot
 *   speak for the line the attempt joined);
 * - the node's votes count now (it is not abstaining after a restart);
 * - at least half the TTL is left of the validity (a waiter whose last request is older
 *   confirms, and so gets a fresh lease).
 * A message is looked at once: {@link counted} is given each hand-over once.
 */
export class HandOverCount {
  /** One record, written over by each attempt: nothing is allocated per attempt. */
  readonly #last: SentAttempt = {
    attempt: 0,
    startedAt: 0,
    generation: 0,
    readiness: 0,
    refused: false,
  };

  constructor(
    private readonly context: LockContext,
    private readonly ttlMs: number,
  ) {}

  /** Call right before attempt `attempt` is sent. */
  sending(attempt: number): void {
    const { clock, nodes, wakeUps } = this.context;
    const last = this.#last;
    last.attempt = attempt;
    last.startedAt = clock.now();
    last.generation = nodes[0]?.generation ?? 0;
    last.readiness = wakeUps.readiness(0);
    last.refused = false;
  }

  /** Call with each attempt's outcome. */
  answered(attempt: Attempt): void {
    this.#last.refused = attempt.kind === 'busy' && attempt.results[0]?.outcome === 'no';
  }

  /** The lock, when `handOver` may count; `undefined` when the waiter must confirm. */
  counted(handOver: HandOver | undefined): Extract<Attempt, { kind: 'acquired' }> | undefined {
    const last = this.#last;
    if (handOver?.node !== 0 || handOver.attempt !== last.attempt) {
      return undefined;
    }
    const { clock, nodes, wakeUps, identities, settings } = this.context;
    const node = nodes[0];
    if (
      !node ||
      !last.refused ||
      node.generation !== last.generation ||
      wakeUps.readiness(0) !== last.readiness ||
      !identities.known(0, this.ttlMs)
    ) {
      return undefined;
    }
    const now = clock.now();
    const validity = validityMs(this.ttlMs, last.startedAt, now, settings.driftFactor);
    if (validity < this.ttlMs / 2) return undefined;
    const results = [{ node: node.name, outcome: 'yes', latencyMs: now - last.startedAt } as const];
    return {
      kind: 'acquired',
      startedAt: last.startedAt,
      deadline: now + validity,
      fence: undefined,
      results,
    };
  }
}
