import type { Cron } from 'croner';
import { asError } from '../caught-errors.js';
import { namesOf, rejectUnknownOptions } from '../config/option-names.js';
import { validateDuration, validateResource } from '../config/options.js';
import { cronerLibrary } from '../driver/libraries.js';
import type { Lock } from '../engine/lock.js';
import { InvalidArgumentError, LockLostError } from '../errors.js';
import { TICK_PREFIX } from '../keys.js';
import type { Locker } from '../locker.js';
import { endTick, lockTick, validateLockAtLeastFor } from './tick-lock.js';

/** How long a scheduled job's lock is kept, as in ShedLock. */
export interface ScheduleOptions {
  /**
   * Upper bound of one run's lock (ms): a node that crashed mid-job holds the tick at most this
   * long. The lock is not extended: keep it longer than the job can take.
   */
  lockAtMostFor: number;
  /**
   * Lower bound (ms): after a short job the lock is kept until this long after the tick
   * started, so a node whose clock runs a little behind does not run the same tick again.
   * It also gives an instance whose tick failed for want of a majority (a node out, votes
   * split) time to ask again, within its first half: a tick is lost to failures only when no
   * majority could be reached that long.
   * @default 0
   */
  lockAtLeastFor?: number;
  /** Time zone of the cron expression (IANA name). @default the process's */
  timezone?: string;
  /** Told after every tick on this node what happened (for logs, metrics and tests). */
  onTick?: (outcome: TickOutcome, scheduledAt: Date, error?: unknown) => void | Promise<void>;
}

const SCHEDULE_OPTIONS = namesOf<ScheduleOptions>({
  lockAtMostFor: true,
  lockAtLeastFor: true,
  timezone: true,
  onTick: true,
});

/** One tick, as the job sees it. */
export interface Tick {
  /** When the tick was due, by the cron expression. */
  readonly scheduledAt: Date;
  /** Aborts if the lock is lost while the job runs (it ran past `lockAtMostFor`). */
  readonly signal: AbortSignal;
}

/**
 * What a tick did on this node: `ran` (the job resolved), `skipped` (another node has the
 * tick), `failed` (the job threw, the tick could not be locked, or its lock not released
 * because the nodes refused, a configuration error such as a missing ACL permission:
 * `error` says why), or
 * `lost`: the tick's lock was lost while the job ran (past `lockAtMostFor`, the nodes lost
 * the key, or the locker was closed). `error` is then the `LockLostError`, whatever the job
 * did (its own error is not reported): it ran unprotected, maybe on another node too.
 */
export type TickOutcome = 'ran' | 'skipped' | 'failed' | 'lost';

/** A running schedule. */
export interface Schedule {
  /** Stops scheduling and waits for a job still running. */
  stop(): Promise<void>;
}

/** The resource that a schedule named `name` locks for each tick. */
export function tickResource(name: string): string {
  return `${TICK_PREFIX}${name}`;
}

/**
 * Runs `job` on every tick of `cron` (seconds field optional: `'* * * * * *'` is every second)
 * on exactly one of the nodes that schedule it under the same `name`: each node tries to
 * lock the tick without waiting; the one that gets it runs the job.
 *
 * @example
 * ```ts
 * const nightly = schedule(locker, 'nightly-report', '0 3 * * *',
 *   { lockAtMostFor: 30 * 60_000, lockAtLeastFor: 60_000 },
 *   async ({ signal }) => buildReport({ signal }));
 * await nightly.stop();
 * ```
 */
export function schedule(
  locker: Locker,
  name: string,
  cron: string,
  options: ScheduleOptions,
  job: (tick: Tick) => Promise<unknown> | unknown,
): Schedule {
  validateResource(name);
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object with `lockAtMostFor`', options);
  }
  rejectUnknownOptions(options, SCHEDULE_OPTIONS, 'schedule');
  const { lockAtMostFor, lockAtLeastFor = 0, timezone, onTick } = options;
  validateDuration('lockAtMostFor', lockAtMostFor);
  validateLockAtLeastFor(lockAtLeastFor, lockAtMostFor);
  if (typeof job !== 'function') throw new InvalidArgumentError('job', 'a function', job);
  let running: Promise<void> = Promise.resolve();
  // A hook that throws (or rejects) must not take the process down from a timer: say so, go on.
  const warn = (hookError: unknown) => {
    const { message, stack } = asError(hookError);
    process.emitWarning(`onTick of schedule "${name}" failed: ${message}`, {
      type: 'DistlockScheduleWarning',
      ...(stack ? { detail: stack } : {}),
    });
  };
  const report = (outcome: TickOutcome, scheduledAt: Date, error?: unknown) => {
    try {
      const returned: unknown = onTick?.(outcome, scheduledAt, error);
      if (returned instanceof Promise) returned.catch(warn);
    } catch (hookError) {
      warn(hookError);
    }
  };
  const runTick = async (scheduledAt: Date) => {
    let lock: Lock | null;
    try {
      lock = await lockTick(locker, tickResource(name), { lockAtMostFor, lockAtLeastFor });
    } catch (error) {
      return report('failed', scheduledAt, error);
    }
    if (!lock) return report('skipped', scheduledAt);
    let failure: unknown;
    try {
      await job({ scheduledAt, signal: lock.signal });
    } catch (error) {
      failure = error;
    }
    const ended = await endTick(lock);
    if (ended instanceof LockLostError) return report('lost', scheduledAt, ended);
    failure ??= ended; // the job's own error first, then a release the nodes refused
    report(failure === undefined ? 'ran' : 'failed', scheduledAt, failure);
  };
  const { Cron } = cronerLibrary();
  let timer: Cron;
  try {
    timer = new Cron(cron, { protect: true, ...(timezone ? { timezone } : {}) }, (self) => {
      // croner reports when its timer fired; the job and its hooks get the cron instant, the
      // same on every node, so that users can de-duplicate on it.
      const firedAt = self.currentRun() ?? new Date();
      const scheduledAt = self.previousRuns(1, new Date(firedAt.getTime() + 1))[0] ?? firedAt;
      running = runTick(scheduledAt);
      return running;
    });
  } catch {
    throw new InvalidArgumentError('cron', 'a valid cron expression', cron);
  }
  return {
    async stop() {
      timer.stop();
      await running;
    },
  };
}
