export type { ForceReleaseOptions, InspectOptions, ListOptions } from './config/inspect-options.js';
export type { NodeSpec, TlsOptions } from './config/node-specs.js';
export { type AcquireOptions, DEFAULTS, type LockerOptions } from './config/options.js';
export type {
  HoldInfo,
  LockTelemetry,
  OperationEnd,
  TracedOperation,
} from './config/telemetry.js';
export type { RedisClient } from './driver/clients.js';
export { NotSentError, type RedisConnection, type Subscriber } from './driver/connection.js';
export { IORedisConnection, type IORedisLike } from './driver/ioredis.js';
export { TlsSchemeError } from './driver/tls-scheme.js';
export { Acquirer, type HoldOptions } from './engine/acquirer.js';
export type { ReleaseResult } from './engine/contract.js';
export type {
  ForcedAction,
  ForceReleaseResult,
  LockerEvents,
  NodeForceRelease,
  WarningCode,
} from './engine/events.js';
export { Lock } from './engine/lock.js';
export {
  AbortedError,
  AcquireTimeoutError,
  ForeignDataError,
  InvalidArgumentError,
  LockBusyError,
  LockError,
  type LockErrorCode,
  LockerClosedError,
  LockLostError,
  MissingLibraryError,
  type MissingLibraryOptions,
  NoQuorumError,
  NoReplyError,
  UnsafeNodeError,
} from './errors.js';
export {
  type FencedCommandOptions,
  type FencedWriteResult,
  fencedPeek,
  fencedRead,
  fencedReadForUpdate,
  fencedWrite,
  readFenced,
} from './fencing/fenced-data.js';
export type { ListedResource, ResourceKind } from './inventory/list.js';
export { Election, type ElectionWaitOptions } from './kinds/election/election.js';
export type { ElectionOptions } from './kinds/election/election-options.js';
export type { Leader } from './kinds/election/leader-read.js';
export { Leadership } from './kinds/election/leadership.js';
export type { LockInspection, LockState, NodeInspection } from './kinds/mutex/inspect.js';
export { MultiLock } from './kinds/mutex/multi-lock.js';
export { ReadWriteLock } from './kinds/rwlock/read-write-lock.js';
export {
  type PermitOptions,
  Semaphore,
  type SemaphoreOptions,
} from './kinds/semaphore/semaphore.js';
export { Locker } from './locker.js';
export type { NodeOutcome, NodeResult } from './node-result.js';
export {
  type Schedule,
  type ScheduleOptions,
  schedule,
  type Tick,
  type TickOutcome,
} from './schedule/schedule.js';
