import { Cron } from 'croner';
import { InvalidArgumentError } from '../errors.js';
import type { Lock } from '../lock/lock.js';
import type { Locker } from '../lock/locker.js';
import { MAX_TIMER_MS, validateResource } from '../options.js';

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
   * @default 0
   */
  lockAtLeastFor?: number;
  /** Time zone of the cron expression (IANA name). @default the process's */
  timezone?: string;
  /** Told after every tick on this node what happened (for logs, metrics and tests). */
  onTick?: (outcome: TickOutcome, scheduledAt: Date, error?: unknown) => void;
}

/** One tick, as the job sees it. */
export interface Tick {
  /** When the tick was due, by the cron expression. */
  readonly scheduledAt: Date;
  /** Aborts if the lock is lost while the job runs (it ran past `lockAtMostFor`). */
  readonly signal: AbortSignal;
}

/** What a tick did on this node. */
export type TickOutcome = 'ran' | 'skipped' | 'failed';

/** A running schedule. */
export interface Schedule {
  /** Stops scheduling and waits for a job still running. */
  stop(): Promise<void>;
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
  const { lockAtMostFor, lockAtLeastFor = 0, timezone, onTick } = options;
  if (!Number.isSafeInteger(lockAtMostFor) || lockAtMostFor <= 0 || lockAtMostFor > MAX_TIMER_MS) {
    throw new InvalidArgumentError(
      'lockAtMostFor',
      `a positive integer (ms) of at most ${MAX_TIMER_MS}`,
      lockAtMostFor,
    );
  }
  if (
    !Number.isSafeInteger(lockAtLeastFor) ||
    lockAtLeastFor < 0 ||
    lockAtLeastFor > lockAtMostFor
  ) {
    throw new InvalidArgumentError(
      'lockAtLeastFor',
      `an integer in [0, lockAtMostFor]`,
      lockAtLeastFor,
    );
  }
  if (typeof job !== 'function') throw new InvalidArgumentError('job', 'a function', job);
  let running: Promise<void> = Promise.resolve();
  const runTick = async (scheduledAt: Date) => {
    const startedAt = performance.now();
    let lock: Lock | null;
    try {
      lock = await locker.tryAcquire(`schedule:${name}`, { ttlMs: lockAtMostFor });
    } catch (error) {
      return onTick?.('failed', scheduledAt, error);
    }
    if (!lock) return onTick?.('skipped', scheduledAt);
    let failure: unknown;
    try {
      await job({ scheduledAt, signal: lock.signal });
    } catch (error) {
      failure = error;
    }
    const keepMs = Math.floor(lockAtLeastFor - (performance.now() - startedAt));
    // Keep the tick locked until lockAtLeastFor has passed; release when it already has.
    await (keepMs > 100 ? lock.extend(keepMs).catch(() => undefined) : lock.release());
    onTick?.(failure === undefined ? 'ran' : 'failed', scheduledAt, failure);
  };
  let timer: Cron;
  try {
    timer = new Cron(cron, { protect: true, ...(timezone ? { timezone } : {}) }, (self) => {
      const scheduledAt = self.currentRun() ?? new Date();
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
