import { rejectUnknownOptions } from '../config/option-names.js';
import {
  ACQUIRE_OPTIONS,
  type AcquireOptions,
  validateDuration,
  validateResource,
} from '../config/options.js';
import { InvalidArgumentError, type LockError } from '../errors.js';
import { tickResource } from '../schedule/schedule.js';
import { endTick, lockTick, validateLockAtLeastFor } from '../schedule/tick-lock.js';
import { runHolding } from './held-lock.js';
import { injectLocker, lockerOf } from './lockers.js';

/** Options of {@link Locked}: those of `acquire`, and what to do when the lock is busy. */
export type LockedOptions = AcquireOptions & {
  /**
   * `'wait'` (the default) waits up to `waitMs` as `acquire` does, then rejects with
   * `AcquireTimeoutError`; `'skip'` returns `undefined` at once without running the method.
   */
  onBusy?: 'wait' | 'skip';
};

/** What a decorated method is, to the wrapper. */
type Method = (...args: unknown[]) => unknown;

/**
 * Runs the decorated method under a lock of the application's `Locker` (DistlockModule):
 * acquired before the call, auto-extended while it runs (up to `maxHoldMs`), released after,
 * also when it throws. The resource is `key`, or what `key` returns given the method's
 * arguments. Inside, {@link heldLock} gives the lock: its `signal` (stop when it fires) and
 * `fence`. If the lock was lost while the method ran, the call rejects with the
 * `LockLostError`. Options are checked when the class is defined.
 *
 * @example
 * ```ts
 * @Locked((orderId: string) => `order:${orderId}`, { ttlMs: 10_000, onBusy: 'skip' })
 * async ship(orderId: string) { ... }
 * ```
 */
export function Locked<Args extends unknown[]>(
  key: string | ((...args: Args) => string),
  options: LockedOptions,
): MethodDecorator {
  if (typeof key !== 'function') validateResource(key, 'key');
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object with `ttlMs`', options);
  }
  const { onBusy = 'wait', ...acquire } = options;
  rejectUnknownOptions(acquire, ACQUIRE_OPTIONS, '@Locked');
  if (onBusy !== 'wait' && onBusy !== 'skip') {
    throw new InvalidArgumentError('onBusy', "'wait' or 'skip'", onBusy);
  }
  if (onBusy === 'skip' && acquire.waitMs !== undefined && acquire.waitMs !== 0) {
    throw new InvalidArgumentError('waitMs', "absent with onBusy: 'skip'", acquire.waitMs);
  }
  validateDuration('ttlMs', acquire.ttlMs);
  return decorate('Locked', async function run(this: object, original, method, args) {
    const locker = lockerOf(this, 'Locked', method);
    const resource = typeof key === 'function' ? key(...(args as Args)) : key;
    const settings = { autoExtend: true, ...acquire };
    const lock =
      onBusy === 'skip'
        ? await locker.tryAcquire(resource, settings)
        : await locker.acquire(resource, settings);
    if (!lock) return undefined;
    let result: unknown;
    try {
      result = await runHolding(lock, () => original.apply(this, args));
    } catch (error) {
      // The method's own error first: a release the nodes refused would only hide it.
      await lock.release().catch(() => undefined);
      throw error;
    }
    const lost = lock.signal.aborted ? lock.signal.reason : undefined;
    await lock.release();
    if (lost) throw lost;
    return result;
  });
}

/** Options of {@link OncePerTick}: ShedLock's, as `schedule()` takes them. */
export interface OncePerTickOptions {
  /** How long a tick's lock lives at most (ms): keep it below the interval between ticks. */
  lockAtMostFor: number;
  /** How long it is kept at least after the tick began (ms), however short the job. @default 0 */
  lockAtLeastFor?: number;
}

/**
 * Runs a scheduled method (`@Cron`, `@Interval` of `@nestjs/schedule`) on one instance of the
 * fleet per tick: each instance tries the tick's lock without waiting, the one that gets it
 * runs the method, the others skip the tick (the method returns `undefined` there). As
 * `schedule()` does: `lockAtMostFor` bounds how long an instance that died holds the tick,
 * `lockAtLeastFor` keeps it after a short run so that an instance whose clock is behind does
 * not run it again. Inside, {@link heldLock} gives the tick's lock. A tick whose lock could not
 * be tried, or was lost, rejects (and `@nestjs/schedule` logs it).
 *
 * @example
 * ```ts
 * @Cron('0 3 * * *')
 * @OncePerTick('nightly-report', { lockAtMostFor: 30 * 60_000, lockAtLeastFor: 60_000 })
 * async nightlyReport() { ... }
 * ```
 */
export function OncePerTick(name: string, options: OncePerTickOptions): MethodDecorator {
  validateResource(name, 'name');
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object with `lockAtMostFor`', options);
  }
  const { lockAtMostFor, lockAtLeastFor = 0 } = options;
  validateDuration('lockAtMostFor', lockAtMostFor);
  validateLockAtLeastFor(lockAtLeastFor, lockAtMostFor);
  const times = { lockAtMostFor, lockAtLeastFor };
  return decorate('OncePerTick', async function run(this: object, original, method, args) {
    const locker = lockerOf(this, 'OncePerTick', method);
    const lock = await lockTick(locker, tickResource(name), times);
    if (!lock) return undefined;
    let result: unknown;
    let failure: unknown;
    try {
      result = await runHolding(lock, () => original.apply(this, args));
    } catch (error) {
      failure = error;
    }
    const ended: LockError | undefined = await endTick(lock);
    if (failure !== undefined) throw failure;
    if (ended) throw ended;
    return result;
  });
}

/**
 * A method decorator that replaces the method with `wrapper`, keeping what other decorators
 * stored on it (`@Cron`'s metadata), in whichever order they are written.
 */
function decorate(
  decorator: string,
  wrapper: (this: object, original: Method, method: string, args: unknown[]) => Promise<unknown>,
): MethodDecorator {
  return (prototype, property, descriptor) => {
    const original = descriptor.value as unknown;
    const method = String(property);
    if (typeof original !== 'function' || typeof prototype === 'function') {
      const what = typeof prototype === 'function' ? 'a static method' : original;
      throw new InvalidArgumentError(decorator, 'on an instance method', what);
    }
    injectLocker(prototype);
    const wrapped = function (this: object, ...args: unknown[]) {
      return wrapper.call(this, original as Method, method, args);
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    copyMetadata(original, wrapped);
    (descriptor as PropertyDescriptor).value = wrapped;
    return descriptor;
  };
}

/** Metadata other decorators stored on the method (reflect-metadata, when loaded). */
function copyMetadata(from: object, to: object): void {
  const reflect = Reflect as unknown as {
    getMetadataKeys?: (target: object) => unknown[];
    getMetadata?: (key: unknown, target: object) => unknown;
    defineMetadata?: (key: unknown, value: unknown, target: object) => void;
  };
  if (!reflect.getMetadataKeys || !reflect.getMetadata || !reflect.defineMetadata) return;
  for (const key of reflect.getMetadataKeys(from)) {
    reflect.defineMetadata(key, reflect.getMetadata(key, from), to);
  }
}
