import { hostname } from 'node:os';
import { InvalidArgumentError } from '../errors.js';
import type { NodeSpec, TlsOptions } from './node-specs.js';
import { namesOf, rejectUnknownOptions } from './option-names.js';
import type { LockTelemetry } from './telemetry.js';

/** Options of a {@link Locker}. */
export interface LockerOptions {
  /**
   * The independent Redis masters. One node gives the single-instance lock; N nodes give
   * Redlock with a quorum of N/2 + 1. Clients you pass stay yours: `close()` leaves them open.
   */
  nodes: readonly NodeSpec[];
  /**
   * Prefix of every key distlock writes, without `{` or `}` (the hash tag that follows it
   * keeps each resource's keys in one Redis Cluster slot). @default 'distlock:'
   */
  prefix?: string;
  /** Clock drift allowed per ms of TTL; validity = ttl - elapsed - (ttl * driftFactor + 2). @default 0.01 */
  driftFactor?: number;
  /**
   * How long one node may take to answer before it counts as failed (ms). A release claims no
   * validity, so it waits for each node at least 1 s (at most the TTL) whatever this says.
   * @default 1/200 of the TTL, clamped to [20, 500] ms and to at most half the TTL
   */
  nodeTimeoutMs?: number;
  /** Mean pause between acquire attempts (ms); each pause is random in [0.5, 1.5) of it. @default 100 */
  retryDelayMs?: number;
  /**
   * What to do with a node whose eviction policy may drop lock keys (`maxmemory` set and a
   * policy other than `noeviction`): `'warn'` (a `warning` event, or a process warning when
   * nobody listens) or `'refuse'` (acquisitions reject with `UnsafeNodeError`). @default 'warn'
   */
  onEvictionRisk?: 'warn' | 'refuse';
  /**
   * How long a node that restarted or failed over (it answers with another `run_id`) does
   * not vote, counted from its restart (its uptime) or, when that cannot be told, from when
   * the change was seen: it may have lost the locks it held, and must not grant them again
   * before every lease it could have granted has run out. Must cover the longest lease any
   * client of these nodes asks for. By default, on two nodes or more, each node keeps a
   * record of the longest lease lockers may have been granted there (`<prefix>longest-lease`,
   * written once per locker and node), and the grace is the longest on record on any node
   * (or this locker's own longest `ttlMs`, if longer); a node first seen that may have been
   * up for less than that (its uptime is whole seconds: a second is taken off), whose server
   * did not keep its own record (it restarted), abstains too, so that a new process (the CLI)
   * keeps out of it as well. Given explicitly (> 0), it replaces that:
   * it applies to a single node too (by default only warned about), and to every node first
   * seen that may have been up for less than it. `0`: no node abstains for a restart (for
   * nodes whose writes survive one: `appendfsync always`); the warnings stay. Minimum 0.
   * @default the longest lease on record on the nodes
   */
  restartGraceMs?: number;
  /**
   * How long after the locker is made its acquisitions wait for nodes that it never reached
   * and that cannot be connected to (connection refused, no such host, no route), for a
   * service that may start before its Redis. Past it, an attempt that such nodes deny a
   * majority ends the acquisition at once with a `NoQuorumError` that names them, whatever
   * `waitMs` is left: nothing listens there, and waiting cannot help. A node that answered
   * once and then went down is waited for within `waitMs` as usual, and so is one that
   * does not answer in time. `Infinity`: always wait. Minimum 0. @default 0
   */
  startupWaitMs?: number;
  /** TLS for the `rediss://` URLs in `nodes`: a CA to trust, a client certificate (mTLS). */
  tls?: TlsOptions;
  /**
   * How many replicas of a node must confirm each lock write (acquisition, extension) with
   * Redis `WAIT`, within the per-node timeout, before that node's vote counts. With Sentinel
   * failover, a promoted replica that missed the lock would let a second holder in; this
   * narrows that to replicas that had it (not to zero: `WAIT` is not consensus). Needs
   * `nodeTimeoutMs` of at least 200 ms, given explicitly: Redis answers a `WAIT` that timed
   * out up to 100 ms late. While a replica lags, the `WAIT` holds the locker's connection to
   * that node, and its other commands wait behind it. @default 0
   */
  replicaAcks?: number;
  /**
   * Where to report spans and metrics, e.g. `openTelemetry()` from `distlock/opentelemetry`.
   * Without it distlock reports nothing and pays nothing for it.
   */
  telemetry?: LockTelemetry;
  /**
   * Who holds the locks this locker takes, as `inspect()`, `distlock status` and the events
   * show it: a label an operator recognises (a host and pid, a job's name). At most
   * 100 characters, no control characters. Data only: it travels inside the hold's value,
   * beside the random token, which never leaves Redis with it. `false`: no label.
   * @default `<hostname>:<pid>`
   */
  owner?: string | false;
}

/** Options of {@link Locker.acquire}. */
export interface AcquireOptions {
  /** Lease length in ms: the lock frees itself this long after acquisition unless extended. */
  ttlMs: number;
  /** How long to keep retrying while the resource is busy (ms); 0 = one attempt. @default 10000 */
  waitMs?: number;
  /** Cancels the wait; the acquire then rejects with an `AbortedError`. */
  signal?: AbortSignal;
  /**
   * Extend the lease automatically (when half its validity is left) until released, lost,
   * or `maxHoldMs` after acquisition. @default false
   */
  autoExtend?: boolean;
  /**
   * Longest an auto-extended lock is held: auto-extension stops short of it, then the lease
   * runs out and the signal fires. At least `ttlMs`, since the first lease alone lasts that
   * long (and outlives the process if it dies); to hold for less, lower `ttlMs`.
   * @default 3600000 (one hour), or `ttlMs` when that is longer
   */
  maxHoldMs?: number;
  /**
   * Shortest time the resource stays locked after acquisition, also when released sooner
   * (or when the locker closes): a release before then leaves the key to expire at that
   * moment instead of deleting it (ShedLock's `lockAtLeastFor`). At most `ttlMs`. @default 0
   */
  minHoldMs?: number;
  /**
   * Strict arrival order: a free lock goes only to the first waiter in line, and every release
   * hands the lock to it. Without `fair`, waiters still wait in a line in Redis in arrival
   * order, but for 10 ms after the lock last went to the front of the line a release leaves
   * it free for whoever asks first (the releaser asking again, a newcomer, or the first
   * waiter, who is woken): a holder that works in a loop keeps going without a hand-off, and
   * the first waiter still gets the lock within those 10 ms plus one hold. Once a fair waiter
   * joins a line, every release hands over until the line is empty. A waiter that gave up
   * leaves the line, one that died is dropped after max(1 s, 5 × retryDelayMs).
   * @default false
   */
  fair?: boolean;
  /**
   * Draw a fencing token (`lock.fence`, a bigint) that grows with every holder of the
   * resource, also across Redlock majorities, and on one node (or Sentinel, or Cluster) also
   * across an empty restart or a failover to a lagging replica: there it never falls below
   * the node's clock in µs (docs/fencing.md). Costs a script instead of a plain SET, and one
   * more round trip only when the nodes' counters disagree. @default false
   */
  fencing?: boolean;
  /** Who holds this lock, instead of the locker's `owner` (the same rules). */
  owner?: string;
}

/** Locker settings after defaults were applied. */
export interface LockerSettings {
  readonly prefix: string;
  readonly driftFactor: number;
  readonly nodeTimeoutMs: number | undefined;
  readonly retryDelayMs: number;
  readonly onEvictionRisk: 'warn' | 'refuse';
  /** Given, or `undefined`: the longest lease on record on the nodes (see `LeaseRecords`). */
  readonly restartGraceMs: number | undefined;
  readonly replicaAcks: number;
  readonly startupWaitMs: number;
  readonly telemetry: LockTelemetry | undefined;
  /** The owner label, or `undefined` for none. */
  readonly owner: string | undefined;
}

/** The names of {@link LockerOptions}: a name missing here, or one too many, fails to compile. */
export const LOCKER_OPTIONS = namesOf<LockerOptions>({
  nodes: true,
  prefix: true,
  driftFactor: true,
  nodeTimeoutMs: true,
  retryDelayMs: true,
  onEvictionRisk: true,
  restartGraceMs: true,
  startupWaitMs: true,
  tls: true,
  replicaAcks: true,
  telemetry: true,
  owner: true,
});

/** The names of {@link AcquireOptions}. */
export const ACQUIRE_OPTIONS = namesOf<AcquireOptions>({
  ttlMs: true,
  waitMs: true,
  signal: true,
  autoExtend: true,
  maxHoldMs: true,
  minHoldMs: true,
  fair: true,
  fencing: true,
  owner: true,
});

/** Defaults of {@link LockerOptions} and {@link AcquireOptions}. */
export const DEFAULTS = {
  prefix: 'distlock:',
  driftFactor: 0.01,
  retryDelayMs: 100,
  waitMs: 10_000,
  maxHoldMs: 3_600_000,
} as const;

/**
 * Per-node timeout used when the caller sets none: 1/200 of the TTL (50 ms for a 10 s lease,
 * the upper end of the Redlock paper's 5–50 ms), at least 20 ms so that a garbage-collection
 * pause does not fail healthy nodes, at most 500 ms, and never more than half the TTL.
 */
export function defaultNodeTimeoutMs(ttlMs: number): number {
  return Math.max(1, Math.min(Math.max(Math.round(ttlMs / 200), 20), 500, Math.floor(ttlMs / 2)));
}

/**
 * The longest delay a Node.js timer holds (2^31 - 1 ms, about 24.8 days). Anything longer
 * fires after 1 ms instead, so every duration that becomes one timer is bounded by it.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** The shortest per-node timeout that leaves a `WAIT` (replicaAcks) room to answer. */
export const MIN_WAIT_NODE_TIMEOUT_MS = 200;

/** Validates everything in `options` but the nodes, synchronously, and applies defaults. */
export function lockerSettings(options: LockerOptions): LockerSettings {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, LOCKER_OPTIONS, 'new Locker()', {
    other: { owner: 'acquire', names: ACQUIRE_OPTIONS },
  });
  const prefix = options.prefix ?? DEFAULTS.prefix;
  // A `{` would move the hash tag of every key; with a `}`, `p}` and a name could share keys
  // with `p` and a name that begins with `}` (see `keys.ts`).
  if (typeof prefix !== 'string' || !prefix.isWellFormed() || /[{}]/.test(prefix)) {
    throw new InvalidArgumentError(
      'prefix',
      'a well-formed Unicode string without `{` or `}`',
      prefix,
    );
  }
  const driftFactor = options.driftFactor ?? DEFAULTS.driftFactor;
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 0.5)) {
    throw new InvalidArgumentError('driftFactor', 'a number in [0, 0.5)', driftFactor);
  }
  const nodeTimeoutMs = options.nodeTimeoutMs;
  if (nodeTimeoutMs !== undefined) duration('nodeTimeoutMs', nodeTimeoutMs, MAX_TIMER_MS);
  const retryDelayMs = options.retryDelayMs ?? DEFAULTS.retryDelayMs;
  // A pause is up to 1.5 times the mean.
  duration('retryDelayMs', retryDelayMs, Math.floor(MAX_TIMER_MS / 1.5));
  const onEvictionRisk = options.onEvictionRisk ?? 'warn';
  if (onEvictionRisk !== 'warn' && onEvictionRisk !== 'refuse') {
    throw new InvalidArgumentError('onEvictionRisk', "'warn' or 'refuse'", onEvictionRisk);
  }
  const { restartGraceMs } = options;
  if (
    restartGraceMs !== undefined &&
    !(Number.isSafeInteger(restartGraceMs) && restartGraceMs >= 0 && restartGraceMs <= MAX_TIMER_MS)
  ) {
    throw new InvalidArgumentError(
      'restartGraceMs',
      `an integer >= 0 and at most ${MAX_TIMER_MS} (ms)`,
      restartGraceMs,
    );
  }
  const replicaAcks = options.replicaAcks ?? 0;
  if (!Number.isSafeInteger(replicaAcks) || replicaAcks < 0) {
    throw new InvalidArgumentError('replicaAcks', 'an integer >= 0', replicaAcks);
  }
  if (replicaAcks > 0 && !((nodeTimeoutMs ?? 0) >= MIN_WAIT_NODE_TIMEOUT_MS)) {
    // Redis answers a WAIT that timed out up to 100 ms late: a shorter per-node timeout
    // would count every node whose replica lags as silent, and mark it stalled.
    throw new InvalidArgumentError(
      'nodeTimeoutMs',
      `at least ${MIN_WAIT_NODE_TIMEOUT_MS} ms, given explicitly, with replicaAcks`,
      nodeTimeoutMs,
    );
  }
  const startupWaitMs = options.startupWaitMs ?? 0;
  if (
    typeof startupWaitMs !== 'number' ||
    !(Number.isSafeInteger(startupWaitMs) || startupWaitMs === Number.POSITIVE_INFINITY) ||
    startupWaitMs < 0
  ) {
    throw new InvalidArgumentError(
      'startupWaitMs',
      'an integer >= 0 (ms), or Infinity',
      startupWaitMs,
    );
  }
  const { telemetry } = options;
  const isTelemetry = (t: unknown): t is LockTelemetry =>
    typeof t === 'object' &&
    t !== null &&
    'start' in t &&
    typeof t.start === 'function' &&
    'held' in t &&
    typeof t.held === 'function';
  if (telemetry !== undefined && !isTelemetry(telemetry)) {
    throw new InvalidArgumentError(
      'telemetry',
      'a LockTelemetry (e.g. openTelemetry())',
      telemetry,
    );
  }
  return {
    prefix,
    driftFactor,
    nodeTimeoutMs,
    retryDelayMs,
    onEvictionRisk,
    restartGraceMs,
    replicaAcks,
    startupWaitMs,
    telemetry,
    owner:
      options.owner === false ? undefined : validateOwner('owner', options.owner ?? processOwner()),
  };
}

/** The longest owner label, in UTF-16 code units (about 300 bytes once percent-encoded). */
export const MAX_OWNER_LENGTH = 100;

/** A control character (C0, DEL or C1): none may reach a terminal from an owner label. */
const CONTROL_CHARACTER = /\p{Cc}/u;

let defaultOwner: string | undefined;

/**
 * A label an operator recognises: this host and process (`web-3:4242`). Deno denies the host
 * name without `--allow-sys`: then `$HOSTNAME`, else the pid alone.
 */
export function processOwner(): string {
  if (defaultOwner !== undefined) return defaultOwner;
  let host: string | undefined;
  try {
    host = hostname();
  } catch {
    host = process.env.HOSTNAME;
  }
  defaultOwner = validOwnerOr(host ? `${host}:${process.pid}` : `pid ${process.pid}`);
  return defaultOwner;
}

/** `label` if it is a valid owner label (a host name may be anything), else the pid alone. */
function validOwnerOr(label: string): string {
  try {
    return validateOwner('owner', label);
  } catch {
    return `pid ${process.pid}`;
  }
}

/**
 * Throws unless `owner` is an owner label: a well-formed string of 1 to
 * {@link MAX_OWNER_LENGTH} characters without control characters (it is shown on terminals).
 */
export function validateOwner(field: string, owner: unknown): string {
  if (
    typeof owner !== 'string' ||
    owner.length === 0 ||
    owner.length > MAX_OWNER_LENGTH ||
    !owner.isWellFormed() ||
    CONTROL_CHARACTER.test(owner)
  ) {
    throw new InvalidArgumentError(
      field,
      `a label of 1 to ${MAX_OWNER_LENGTH} characters, without control characters`,
      owner,
    );
  }
  return owner;
}

/**
 * Throws unless `resource` is a non-empty, well-formed Unicode string: a lone surrogate
 * reaches Redis as U+FFFD, so `"\uD800"` and `"\uDC00"` would share one lock.
 */
export function validateResource(
  resource: unknown,
  field = 'resource',
): asserts resource is string {
  if (typeof resource !== 'string' || resource.length === 0 || !resource.isWellFormed()) {
    throw new InvalidArgumentError(field, 'a non-empty, well-formed Unicode string', resource);
  }
}

/**
 * Throws unless `ttlMs` is a positive integer that a timer can hold, longer than the node
 * timeout and the drift.
 */
export function validateTtl(field: string, ttlMs: unknown, locker: LockerSettings): number {
  duration(field, ttlMs, MAX_TIMER_MS);
  if (locker.nodeTimeoutMs !== undefined && ttlMs <= locker.nodeTimeoutMs) {
    throw new InvalidArgumentError(
      field,
      `longer than \`nodeTimeoutMs\` (${locker.nodeTimeoutMs})`,
      ttlMs,
    );
  }
  if (ttlMs * (1 - locker.driftFactor) <= 2) {
    throw new InvalidArgumentError(field, 'longer than the clock-drift allowance', ttlMs);
  }
  return ttlMs;
}

/** Throws unless `value` is a positive integer (ms) that a timer can hold. */
export function validateDuration(field: string, value: unknown): asserts value is number {
  duration(field, value, MAX_TIMER_MS);
}

/** Throws unless `value` is a positive integer of at most `max` ms. */
function duration(field: string, value: unknown, max: number): asserts value is number {
  positiveInteger(field, value);
  if (value > max) {
    throw new InvalidArgumentError(field, `at most ${max} ms (${describeMs(max)})`, value);
  }
}

function describeMs(ms: number): string {
  return `about ${(ms / 86_400_000).toFixed(1)} days, the longest delay a timer can hold`;
}

/** Throws unless `value` is a positive integer. */
export function positiveInteger(field: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgumentError(field, 'a positive integer', value);
  }
}
