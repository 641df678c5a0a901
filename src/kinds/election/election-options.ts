import { namesOf, rejectUnknownOptions } from '../../config/option-names.js';
import { type LockerSettings, positiveInteger, validateTtl } from '../../config/options.js';
import { InvalidArgumentError } from '../../errors.js';

/**
 * Timings of an election, as in Kubernetes' client-go leader election (whose defaults, 15 s,
 * 10 s and 2 s, are the ratios used here when only some are given).
 */
export interface ElectionOptions {
  /**
   * How long a leadership lasts without renewal (ms): the TTL of the leader's lock. A leader
   * that dies unannounced is replaced this long after its last renewal at the latest.
   * @default 15000
   */
  leaseMs?: number;
  /**
   * How long the leader keeps trying to renew before it gives up (ms), counted from the start
   * of its last confirmed renewal: its `signal` then fires, before the lease ends on the
   * nodes, so a leader cut off from Redis stops before another can be elected. Less than
   * `leaseMs`. @default two thirds of `leaseMs` (10000)
   */
  renewDeadlineMs?: number;
  /**
   * How often the leader renews (ms), and how often observers read the leader again in case
   * a change message was lost or a lease ran out unannounced. Less than `renewDeadlineMs`.
   * @default a fifth of `renewDeadlineMs` (2000)
   */
  retryMs?: number;
}

/** Validated {@link ElectionOptions}. */
export interface ElectionSettings {
  readonly leaseMs: number;
  readonly renewDeadlineMs: number;
  readonly retryMs: number;
}

const ELECTION_OPTIONS = namesOf<ElectionOptions>({
  leaseMs: true,
  renewDeadlineMs: true,
  retryMs: true,
});

/** Defaults of {@link ElectionOptions}: client-go's. */
const DEFAULT_LEASE_MS = 15_000;

/** Validates an election's options synchronously, and applies defaults. */
export function electionSettings(given: unknown, locker: LockerSettings): ElectionSettings {
  if (given === undefined) given = {};
  if (typeof given !== 'object' || given === null) {
    throw new InvalidArgumentError('options', 'an object', given);
  }
  rejectUnknownOptions(given, ELECTION_OPTIONS, 'election');
  const options = given as ElectionOptions;
  const leaseMs = validateTtl('leaseMs', options.leaseMs ?? DEFAULT_LEASE_MS, locker);
  const renewDeadlineMs = options.renewDeadlineMs ?? Math.floor((leaseMs * 2) / 3);
  positiveInteger('renewDeadlineMs', renewDeadlineMs);
  if (renewDeadlineMs >= leaseMs) {
    throw new InvalidArgumentError(
      'renewDeadlineMs',
      `less than leaseMs (${leaseMs})`,
      renewDeadlineMs,
    );
  }
  const retryMs = options.retryMs ?? Math.max(1, Math.floor(renewDeadlineMs / 5));
  positiveInteger('retryMs', retryMs);
  if (retryMs >= renewDeadlineMs) {
    throw new InvalidArgumentError(
      'retryMs',
      `less than renewDeadlineMs (${renewDeadlineMs}), so that a failed renewal is retried`,
      retryMs,
    );
  }
  return { leaseMs, renewDeadlineMs, retryMs };
}

/** Validates a leader's value: any string. */
export function validateValue(value: unknown): asserts value is string {
  if (typeof value !== 'string') throw new InvalidArgumentError('value', 'a string', value);
}

/** Validates the options of `campaign` and `observe`: only a `signal`. */
export function signalOption(given: unknown, method: string): AbortSignal | undefined {
  if (given === undefined) return undefined;
  if (typeof given !== 'object' || given === null) {
    throw new InvalidArgumentError('options', 'an object', given);
  }
  rejectUnknownOptions(given, ['signal'], method);
  const { signal } = given as { signal?: unknown };
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('signal', 'an AbortSignal', signal);
  }
  return signal;
}
