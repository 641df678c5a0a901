import { InvalidArgumentError } from '../errors.js';
import { rejectUnknownOptions } from './option-names.js';
import {
  ACQUIRE_OPTIONS,
  type AcquireOptions,
  DEFAULTS,
  LOCKER_OPTIONS,
  type LockerSettings,
  positiveInteger,
  validateOwner,
  validateResource,
  validateTtl,
} from './options.js';

/** Validated acquire options. */
export interface AcquireSettings {
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly signal: AbortSignal | undefined;
  readonly autoExtend: boolean;
  readonly maxHoldMs: number;
  readonly minHoldMs: number;
  readonly fair: boolean;
  readonly fencing: boolean;
  /** The owner label of the hold, or `undefined` for none. */
  readonly owner: string | undefined;
}

/**
 * Which method takes the acquire options: `tryAcquire` sets `waitMs: 0` itself and `withLock`
 * sets `autoExtend: true`, and a caller may give those only with the same value.
 */
export interface AcquireCall {
  readonly method: 'acquire' | 'tryAcquire' | 'withLock' | 'acquireAll';
  /** The method as users call it, for messages (`Semaphore.withPermit`). @default method */
  readonly name?: string;
  /** Options this hold does not take, each with why. */
  readonly lacks?: Readonly<Partial<Record<keyof AcquireOptions, string>>>;
}

/** What each method sets itself. */
const FIXED_BY: Record<AcquireCall['method'], Pick<AcquireOptions, 'waitMs' | 'autoExtend'>> = {
  acquire: {},
  tryAcquire: { waitMs: 0 },
  withLock: { autoExtend: true },
  acquireAll: {},
};

/** Validates a resource name and acquire options against the locker's settings. */
export function acquireSettings(
  resource: unknown,
  given: unknown,
  locker: LockerSettings,
  call: AcquireCall = { method: 'acquire' },
): AcquireSettings {
  validateResource(resource);
  if (typeof given !== 'object' || given === null) {
    throw new InvalidArgumentError('options', 'an object with `ttlMs`', given);
  }
  const options = given as Partial<AcquireOptions>;
  const fixed = FIXED_BY[call.method];
  checkNames(options, call, fixed);
  const ttlMs = validateTtl('ttlMs', options.ttlMs, locker);
  const waitMs = fixed.waitMs ?? options.waitMs ?? DEFAULTS.waitMs;
  if (typeof waitMs !== 'number' || !(waitMs >= 0)) {
    throw new InvalidArgumentError('waitMs', 'a number >= 0 (Infinity to wait forever)', waitMs);
  }
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('signal', 'an AbortSignal', signal);
  }
  const autoExtend = fixed.autoExtend ?? options.autoExtend ?? false;
  if (typeof autoExtend !== 'boolean') {
    throw new InvalidArgumentError('autoExtend', 'a boolean', autoExtend);
  }
  // The default never cuts a lease short: a lease longer than an hour is held for its TTL.
  const maxHoldMs = options.maxHoldMs ?? Math.max(DEFAULTS.maxHoldMs, ttlMs);
  if (maxHoldMs !== Number.POSITIVE_INFINITY) positiveInteger('maxHoldMs', maxHoldMs);
  if (maxHoldMs < ttlMs) {
    // The first lease alone lasts ttlMs, and outlives this process if it dies: a shorter
    // maxHoldMs could not be kept. A lock held at most 1 s needs a TTL of at most 1 s.
    throw new InvalidArgumentError(
      'maxHoldMs',
      `at least ttlMs = ${ttlMs} (a lease lasts its TTL; lower ttlMs to hold for less)`,
      maxHoldMs,
    );
  }
  const minHoldMs = options.minHoldMs ?? 0;
  if (!Number.isSafeInteger(minHoldMs) || minHoldMs < 0 || minHoldMs > ttlMs) {
    throw new InvalidArgumentError('minHoldMs', `an integer in [0, ttlMs = ${ttlMs}]`, minHoldMs);
  }
  const fair = options.fair ?? false;
  if (typeof fair !== 'boolean') throw new InvalidArgumentError('fair', 'a boolean', fair);
  const fencing = options.fencing ?? false;
  if (typeof fencing !== 'boolean') throw new InvalidArgumentError('fencing', 'a boolean', fencing);
  const owner = options.owner === undefined ? locker.owner : validateOwner('owner', options.owner);
  return { ttlMs, waitMs, signal, autoExtend, maxHoldMs, minHoldMs, fair, fencing, owner };
}

/**
 * Throws for an option the call lacks, an unknown name, or a value other than the one the
 * call sets itself (`fixed`). Runs on every acquire: allocates nothing when all is well.
 */
function checkNames(
  given: Partial<AcquireOptions>,
  call: AcquireCall,
  fixed: Partial<AcquireOptions>,
): void {
  const name = call.name ?? call.method;
  const { lacks } = call;
  if (lacks) {
    for (const [option, why] of Object.entries(lacks)) {
      if (option in given) {
        const value = (given as Record<string, unknown>)[option];
        throw new InvalidArgumentError(option, `absent: ${why}`, value);
      }
    }
  }
  const known = lacks ? ACQUIRE_OPTIONS.filter((option) => !(option in lacks)) : ACQUIRE_OPTIONS;
  rejectUnknownOptions(given, known, name, {
    other: { owner: 'new Locker()', names: LOCKER_OPTIONS },
  });
  for (const option in fixed) {
    const value = fixed[option as keyof AcquireOptions];
    const chosen = given[option as keyof AcquireOptions];
    if (chosen !== undefined && chosen !== value) {
      throw new InvalidArgumentError(option, `absent (${name} always uses ${value})`, chosen);
    }
  }
}
