import { Inject } from '@nestjs/common';
import { Locker } from '../locker.js';

/**
 * Where Nest puts the application's Locker on an instance of a class with a method decorated
 * by distlock: a property injection, so that every instance Nest makes gets it (request-scoped
 * and transient ones too, subclasses too) before any of its methods can run.
 */
const LOCKER = Symbol('distlock locker');

/** Classes already asked for the injection (once per class, however many methods). */
const injected = new WeakSet<object>();

/** Asks Nest to inject the application's Locker into every instance of `prototype`'s class. */
export function injectLocker(prototype: object): void {
  if (injected.has(prototype)) return;
  injected.add(prototype);
  Inject(Locker)(prototype, LOCKER);
}

/** The locker Nest injected into `instance`; throws, naming why, without one. */
export function lockerOf(instance: object, decorator: string, method: string): Locker {
  const locker = (instance as { [LOCKER]?: unknown })[LOCKER];
  if (locker instanceof Locker) return locker;
  const owner = instance?.constructor?.name ?? 'an object';
  throw new Error(
    `@${decorator}() on ${owner}.${method}: no locker. Import DistlockModule.forRoot(...) (or ` +
      'forRootAsync) in the application, and call the method on an instance Nest made (a ' +
      'provider or controller, not `new` nor `useValue`).',
  );
}
