import { isNodeDown } from '../driver/node-down.js';
import { AcquireTimeoutError, LockBusyError, LockError, NoQuorumError } from '../errors.js';
import type { NodeResult } from '../node-result.js';
import { driftMs } from '../quorum/validity.js';
import type { Attempt } from './attempt.js';
import { CONFIGURATION_HINT, misconfiguredQuorum } from './configuration-failure.js';
import type { LockContext } from './context.js';
import type { HoldTarget } from './contract.js';

/** An attempt that did not get the hold. */
export type Refusal = Exclude<Attempt, { kind: 'acquired' }>;

/** The outcome of a failed acquisition, by its error's code: `busy`, `timeout`, `no_quorum`... */
export function outcomeOf(error: unknown): string {
  const code = error instanceof LockError ? error.code : 'ERROR';
  return OUTCOMES[code] ?? code.toLowerCase();
}

const OUTCOMES: Record<string, string> = {
  LOCK_BUSY: 'busy',
  ACQUIRE_TIMEOUT: 'timeout',
  NO_QUORUM: 'no_quorum',
  ABORTED: 'aborted',
  LOCKER_CLOSED: 'closed',
};

/**
 * Whether so many nodes failed with a configuration error (WRONGPASS, NOAUTH, NOPERM, a TLS
 * certificate) that the others cannot make a majority: retrying for the rest of the wait
 * cannot help.
 */
export function misconfigured(attempt: Refusal, { kind }: HoldTarget): boolean {
  if (attempt.kind !== 'unavailable') return false;
  const { results } = attempt;
  return misconfiguredQuorum(results, kind.quorum(results.length));
}

/** What {@link absentSinceStart} reads of a locker. */
export type StartupView = Pick<LockContext, 'nodes' | 'clock' | 'settings' | 'startedAt'>;

/**
 * The nodes of a failed attempt that this locker never reached and that cannot be connected
 * to (connection refused, no such host, no route), once the locker's `startupWaitMs` is
 * over; none while it lasts.
 */
function absentNodes(attempt: Refusal, context: StartupView): string[] {
  const { nodes, clock, settings, startedAt } = context;
  if (attempt.kind !== 'unavailable') return [];
  if (clock.now() - startedAt < settings.startupWaitMs) return [];
  return attempt.results.flatMap((result, index) =>
    result.outcome === 'error' && isNodeDown(result.error) && !nodes[index]?.answeredOnce
      ? [result.node]
      : [],
  );
}

/**
 * Whether so many nodes are absent (see {@link absentNodes}) that the others cannot make a
 * majority. Nothing listens where they were looked for, most likely from the start (Redis is
 * not running, or the address is wrong): retrying for the rest of the wait cannot help. A
 * node that answered once may come back, and is waited for.
 */
export function absentSinceStart(
  attempt: Refusal,
  { kind }: HoldTarget,
  context: StartupView,
): boolean {
  const absent = absentNodes(attempt, context).length;
  const { length } = attempt.results;
  return absent > 0 && length - absent < kind.quorum(length);
}

/** The error an acquisition that gave up rejects with, after its last attempt. */
export function failure(
  target: HoldTarget,
  attempt: Refusal,
  info: {
    ttlMs: number;
    waitMs: number;
    attempts: number;
    context: StartupView;
    startedAt: number;
  },
): LockError {
  const { kind, resource } = target;
  const { results } = attempt;
  switch (attempt.kind) {
    case 'busy':
      return info.waitMs === 0
        ? new LockBusyError(resource, results, attempt.holderRemainingMs)
        : new AcquireTimeoutError(
            resource,
            info.context.clock.now() - info.startedAt,
            info.attempts,
            results,
          );
    case 'unavailable': {
      const needed = kind.quorum(results.length);
      const hint = misconfigured(attempt, target)
        ? ` ${CONFIGURATION_HINT}`
        : absentSinceStart(attempt, target, info.context)
          ? absentHint(absentNodes(attempt, info.context))
          : '';
      return new NoQuorumError(
        resource,
        `No quorum for "${resource}": ${yes(results)} of ${results.length} node(s) agreed, ${needed} needed.${hint}`,
        results,
      );
    }
    case 'expired': {
      const drift = driftMs(info.ttlMs, info.context.settings.driftFactor);
      return new NoQuorumError(
        resource,
        `${yes(results)} of ${results.length} node(s) agreed on "${resource}" too late: ${Math.round(attempt.elapsedMs)} ms elapsed + ${drift} ms drift used up the ${info.ttlMs} ms lease.`,
        results,
      );
    }
  }
}

/** Why an acquisition gave up early on nodes never reached, and how to wait instead. */
function absentHint(absent: readonly string[]): string {
  return (
    ` Gave up early: ${absent.join(', ')} never answered and cannot be connected to ` +
    '(is Redis running there?); to wait for a Redis that starts after this process, give ' +
    'the locker `startupWaitMs`.'
  );
}

function yes(results: readonly NodeResult[]): number {
  return results.filter((r) => r.outcome === 'yes').length;
}
