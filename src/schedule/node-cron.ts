// `distlock/node-cron`: a RunCoordinator for node-cron's `distributed: true`. It needs only
// node-cron's interface, written out below, so this module never imports node-cron.
import { namesOf, rejectUnknownOptions } from '../config/option-names.js';
import { validateDuration, validateResource } from '../config/options.js';
import type { Lock } from '../engine/lock.js';
import { InvalidArgumentError } from '../errors.js';
import type { Locker } from '../locker.js';
import { endTick, lockTick, validateLockAtLeastFor } from './tick-lock.js';

/** Options of {@link runCoordinator}. */
export interface RunCoordinatorOptions {
  /**
   * How long (ms) a fire's lock is kept after it was taken, however short the job, so that an
   * instance whose clock runs behind (or whose timer fires late) finds the fire taken and does
   * not run it again. Keep it above the clock skew between instances plus how late their
   * timers can fire; at most the task's `distributedLease`. A fire that failed with a
   * `NoQuorumError` a retry may mend (a node out, no majority reached), and on N nodes
   * (Redlock, where instances asking at once can split the votes) a busy answer, are asked
   * again within the first half of it: keep skew, lateness and `nodeTimeoutMs` below that. A
   * fire's lock never holds back the next fire, so the default costs only a small key per
   * fire for the lease.
   * @default the whole lease: node-cron's `distributedLease` (30 000 ms unless set)
   */
  lockAtLeastFor?: number;
}

const OPTIONS = namesOf<RunCoordinatorOptions>({ lockAtLeastFor: true });

/**
 * node-cron's `RunCoordinator` (4.4 and later), as distlock implements it: assignable to
 * node-cron's `runCoordinator` task option and to `setRunCoordinator()`.
 */
export interface NodeCronRunCoordinator {
  /**
   * Called by node-cron on every instance at each fire of a `distributed` task. `key` is
   * `<task name>:<the fire's scheduled instant, ISO 8601>`, the same on every instance;
   * `ttlMs` is the task's `distributedLease`, the fire's `lockAtMostFor`. Tries the fire's
   * lock without waiting for a holder (a split vote, or a failure a retry may mend, is asked
   * again, see `lockAtLeastFor`): resolves `true` on the instance that took it, `false` on the
   * others. Throws an `InvalidArgumentError` on bad input, and rejects when the nodes still
   * fail at the end of that window (`NoQuorumError`): node-cron then skips the fire on this
   * instance (fail-closed, reason `coordinator-error`) and logs the error.
   */
  shouldRun(key: string, ttlMs: number): Promise<boolean>;
  /**
   * Called by node-cron after the fire's job ended (also when it threw): releases the fire's
   * lock, whose key stays until `lockAtLeastFor` after it was taken. Rejects with the
   * `LockLostError` when the lock was lost while the job ran (it ran past
   * `distributedLease`, the nodes lost the key, or the locker was closed), or with the
   * `NoQuorumError` of a release the nodes refused (a configuration error), which node-cron
   * logs; resolves otherwise.
   */
  onComplete(key: string): Promise<void>;
}

/** The resource a fire is locked under: `node-cron:<task name>:<scheduled instant>`. */
function fireResource(key: string): string {
  return `node-cron:${key}`;
}

/**
 * A node-cron `RunCoordinator` on distlock: each fire of a `distributed` task runs on exactly
 * one instance of the fleet, the one that takes the fire's lock. A fire's lock lives at most
 * node-cron's `distributedLease` (`lockAtMostFor`) and at least `lockAtLeastFor` after it was
 * taken, as `schedule()` locks a tick. Each fire has its own lock: an instance that dies
 * holding one fire loses that fire only, and a long job does not hold back the next fire.
 *
 * @example
 * ```ts
 * import cron from 'node-cron';
 * import { runCoordinator } from 'distlock/node-cron';
 *
 * cron.schedule('0 3 * * *', () => buildReport(), {
 *   name: 'nightly-report', // required by node-cron: it names the fire's lock
 *   distributed: true,
 *   distributedLease: 30 * 60_000, // lockAtMostFor
 *   runCoordinator: runCoordinator(locker, { lockAtLeastFor: 60_000 }),
 * });
 * ```
 */
export function runCoordinator(
  locker: Locker,
  options: RunCoordinatorOptions = {},
): NodeCronRunCoordinator {
  if (typeof (locker as Partial<Locker> | null)?.tryAcquire !== 'function') {
    throw new InvalidArgumentError('locker', 'a Locker', locker);
  }
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  if (Object.hasOwn(options, 'lockAtMostFor')) {
    // schedule()'s other option: node-cron gives each task's own with every fire.
    const expected =
      "absent (a fire's lockAtMostFor is node-cron's `distributedLease` task option)";
    const { lockAtMostFor } = options as { lockAtMostFor?: unknown };
    throw new InvalidArgumentError('lockAtMostFor', expected, lockAtMostFor);
  }
  rejectUnknownOptions(options, OPTIONS, 'runCoordinator');
  const { lockAtLeastFor } = options;
  if (
    lockAtLeastFor !== undefined &&
    !(Number.isSafeInteger(lockAtLeastFor) && lockAtLeastFor >= 0)
  ) {
    throw new InvalidArgumentError('lockAtLeastFor', 'an integer >= 0 (ms)', lockAtLeastFor);
  }
  // The fires this instance holds, by node-cron's key, until node-cron says they completed.
  const held = new Map<string, Lock>();
  return {
    shouldRun(key, ttlMs) {
      validateResource(key, 'key');
      validateDuration('distributedLease', ttlMs);
      const times = { lockAtMostFor: ttlMs, lockAtLeastFor: lockAtLeastFor ?? ttlMs };
      // Checked per fire: the upper bound is the task's, known only now.
      validateLockAtLeastFor(times.lockAtLeastFor, ttlMs, `distributedLease = ${ttlMs}`);
      return lockTick(locker, fireResource(key), times).then((lock) => {
        if (lock) held.set(key, lock);
        return lock !== null;
      });
    },
    async onComplete(key) {
      const lock = held.get(key);
      if (!lock) return;
      held.delete(key);
      const ended = await endTick(lock);
      if (ended) throw ended;
    },
  };
}
