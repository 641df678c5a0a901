import type { Locker } from '../locker.js';

/** The locker of each provider instance that has a decorated method (see DistlockModule). */
const lockers = new WeakMap<object, Locker>();

/** Methods marked by distlock's decorators, per class prototype. */
const marked = new WeakSet<object>();

/** Notes that `prototype` has a method decorated by distlock. */
export function markDecorated(prototype: object): void {
  marked.add(prototype);
}

/** Gives `instance` its application's locker, if its class has a decorated method. */
export function attachLocker(instance: unknown, locker: Locker): void {
  if (typeof instance !== 'object' || instance === null) return;
  if (marked.has(Object.getPrototypeOf(instance))) lockers.set(instance, locker);
}

/** The locker of the application `instance` belongs to; throws, naming why, without one. */
export function lockerOf(instance: object, decorator: string, method: string): Locker {
  const locker = lockers.get(instance);
  if (locker) return locker;
  const owner = instance.constructor?.name ?? 'an object';
  throw new Error(
    `@${decorator}() on ${owner}.${method}: no locker. Import DistlockModule.forRoot(...) (or ` +
      `forRootAsync) in the application, and call the method on the instance Nest provides.`,
  );
}
