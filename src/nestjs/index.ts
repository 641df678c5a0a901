// `distlock/nestjs`: a Locker for NestJS applications, and decorators that run methods under
// its locks. @nestjs/common and @nestjs/core (and @nestjs/schedule, for scheduled methods)
// are the application's: optional peers, loaded only by this entry.
export {
  Locked,
  type LockedOptions,
  OncePerTick,
  type OncePerTickOptions,
} from './decorators.js';
export { heldLock } from './held-lock.js';
export {
  DISTLOCK_OPTIONS,
  DistlockModule,
  type DistlockModuleAsyncOptions,
  type DistlockModuleOptions,
} from './module.js';
