export type { RedisClient } from './driver/clients.js';
export { NotSentError, type RedisConnection } from './driver/connection.js';
export { IORedisConnection, type IORedisLike } from './driver/ioredis.js';
export {
  AbortedError,
  AcquireTimeoutError,
  InvalidArgumentError,
  LockBusyError,
  LockError,
  type LockErrorCode,
  LockerClosedError,
  LockLostError,
  NoQuorumError,
  NoReplyError,
  UnsafeNodeError,
} from './errors.js';
export {
  type FencedCommandOptions,
  type FencedWriteResult,
  fencedRead,
  fencedWrite,
  readFenced,
} from './fencing/fenced-write.js';
export { Acquirer, type HoldOptions } from './lock/acquirer.js';
export type { LockerEvents, WarningCode } from './lock/events.js';
export type { ReleaseResult } from './lock/lease.js';
export { Lock } from './lock/lock.js';
export { Locker } from './lock/locker.js';
export { MultiLock } from './lock/multi-lock.js';
export type {
  HoldInfo,
  LockTelemetry,
  OperationEnd,
  TracedOperation,
} from './lock/telemetry.js';
export type { NodeSpec, TlsOptions } from './node-specs.js';
export { type AcquireOptions, DEFAULTS, type LockerOptions } from './options.js';
export type { NodeOutcome, NodeResult } from './quorum/node-result.js';
export { ReadWriteLock } from './rwlock/read-write-lock.js';
export {
  type Schedule,
  type ScheduleOptions,
  schedule,
  type Tick,
  type TickOutcome,
} from './schedule/schedule.js';
export { type PermitOptions, Semaphore, type SemaphoreOptions } from './semaphore/semaphore.js';
