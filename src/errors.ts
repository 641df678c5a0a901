import type { NodeResult } from './node-result.js';

/** Stable machine-readable codes carried by every {@link LockError}. */
export type LockErrorCode =
  | 'INVALID_ARGUMENT'
  | 'LOCK_BUSY'
  | 'ACQUIRE_TIMEOUT'
  | 'LOCK_LOST'
  | 'NO_QUORUM'
  | 'ABORTED'
  | 'LOCKER_CLOSED'
  | 'UNSAFE_NODE'
  | 'NO_REPLY'
  | 'FOREIGN_DATA'
  | 'MISSING_LIBRARY';

/**
 * Base class of every error distlock throws or rejects with. Switch on `code`, which is
 * stable across versions; messages are for humans and may change.
 */
export class LockError extends Error {
  readonly code: LockErrorCode;

  constructor(code: LockErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * Bad input, thrown synchronously before any I/O. `field` names the offending option and
 * `expected` what it must be (`"a number >= 0"`).
 */
export class InvalidArgumentError extends LockError {
  readonly field: string;
  readonly expected: string;

  /** `hideValue`: say only the value's type (it may be a secret given under a wrong name). */
  constructor(field: string, expected: string, value: unknown, { hideValue = false } = {}) {
    const got = hideValue ? `a value of type ${typeof value}` : describe(value);
    super('INVALID_ARGUMENT', `Expected \`${field}\` to be ${expected}, got ${got}`);
    this.field = field;
    this.expected = expected;
  }
}

/** Failure that carries what each Redis node answered, in the order the nodes were given. */
abstract class PerNodeError extends LockError {
  readonly resource: string;
  /**
   * What each node answered. Not enumerable: Node prints an uncaught error's enumerable
   * fields with every nested error's stack, and the message already quotes each node.
   */
  declare readonly nodes: readonly NodeResult[];

  constructor(
    code: LockErrorCode,
    message: string,
    resource: string,
    nodes: readonly NodeResult[],
    cause?: unknown,
  ) {
    const detail = summarize(nodes);
    super(
      code,
      detail ? `${message} ${detail}` : message,
      cause === undefined ? undefined : { cause },
    );
    this.resource = resource;
    // A snapshot: the engine's array may still change.
    Object.defineProperty(this, 'nodes', { value: Object.freeze([...nodes]), enumerable: false });
  }
}

/** The resource is held by someone else and the caller asked not to wait (or had no wait left). */
export class LockBusyError extends PerNodeError {
  /** How long the current holder's lease still runs, as reported by the nodes (ms), if known. */
  readonly holderRemainingMs: number | undefined;

  constructor(resource: string, nodes: readonly NodeResult[], holderRemainingMs?: number) {
    super('LOCK_BUSY', `Resource "${resource}" is locked by another holder.`, resource, nodes);
    this.holderRemainingMs = holderRemainingMs;
  }
}

/** `waitMs` ran out while the resource stayed busy. */
export class AcquireTimeoutError extends PerNodeError {
  readonly waitedMs: number;
  readonly attempts: number;

  constructor(resource: string, waitedMs: number, attempts: number, last: readonly NodeResult[]) {
    super(
      'ACQUIRE_TIMEOUT',
      `Gave up on "${resource}" after ${Math.round(waitedMs)} ms and ${attempts} attempt(s).`,
      resource,
      last,
    );
    this.waitedMs = waitedMs;
    this.attempts = attempts;
  }
}

/**
 * Too few nodes answered yes in time: nodes failed, were unreachable, or answered so slowly
 * that the lease's validity was used up. `nodes` says what happened on each one.
 */
export class NoQuorumError extends PerNodeError {
  constructor(resource: string, message: string, nodes: readonly NodeResult[]) {
    const errors = nodes.flatMap((n) => (n.outcome === 'error' ? [n.error] : []));
    super(
      'NO_QUORUM',
      message,
      resource,
      nodes,
      errors.length > 0 ? nodeErrors(errors) : undefined,
    );
  }
}

/** A held lock can no longer be proven valid; stop using the protected resource now. */
export class LockLostError extends PerNodeError {
  constructor(resource: string, reason: string, nodes: readonly NodeResult[] = []) {
    super('LOCK_LOST', `Lock on "${resource}" lost: ${reason}.`, resource, nodes);
  }
}

/** An `AbortSignal` cancelled the operation. The signal's reason is in `cause`. */
export class AbortedError extends LockError {
  constructor(what: string, reason: unknown) {
    super('ABORTED', `${what} was aborted.`, { cause: reason });
  }
}

/**
 * The {@link Locker} was closed: a wait still running was stopped, or an operation came after
 * `close()`. Nothing is left locked by it.
 */
export class LockerClosedError extends LockError {
  constructor(what: string) {
    super('LOCKER_CLOSED', `${what} failed: the locker was closed.`);
  }
}

/**
 * A command got no reply in time (a fenced read or write, whose wait distlock bounds: a
 * connection that silently stopped answering would otherwise hold its caller for ever). The
 * command may or may not have run on the server: read before writing again. Also the `error`
 * of a silent node in the result of `Locker.inspect` or `Locker.forceRelease`.
 */
export class NoReplyError extends LockError {
  readonly node: string;
  readonly timeoutMs: number;

  constructor(node: string, what: string, timeoutMs: number) {
    super(
      'NO_REPLY',
      `No reply from ${node} to ${what} within ${timeoutMs} ms: it may or may not have run.`,
    );
    this.node = node;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * A fenced read or write found `key` holding something that no fenced write stored there (a
 * value of another type, or a `fence` field that is not a decimal integer). Nothing was written:
 * pick a key of its own for the fenced data.
 */
export class ForeignDataError extends LockError {
  readonly key: string;

  /** `found`: what the key holds instead (`a string`, `fence "abc"`). */
  constructor(key: string, found: string) {
    super(
      'FOREIGN_DATA',
      `Key "${key}" holds ${found}, not fenced data (a hash whose \`fence\` field is a decimal integer): nothing was written.`,
    );
    this.key = key;
  }
}

/** What a {@link MissingLibraryError} adds to its message, and the error that found it missing. */
export interface MissingLibraryOptions {
  readonly instead?: string;
  readonly cause?: unknown;
}

/**
 * distlock needs a client library that is not installed: ioredis, to open connections for
 * `redis://` URLs (the command line uses it too). Thrown synchronously, before any I/O.
 * Install `library`, or pass clients of a library you already use as the nodes.
 */
export class MissingLibraryError extends LockError {
  /** The npm package to install, e.g. `ioredis`. */
  readonly library: string;

  /**
   * `purpose`: what needed it (`to connect to redis:// URLs`); `instead`: what else the
   * caller may do.
   */
  constructor(library: string, purpose: string, { instead, cause }: MissingLibraryOptions = {}) {
    super(
      'MISSING_LIBRARY',
      `distlock needs ${library} ${purpose}, and it is not installed: npm install ${library}${instead ? ` (${instead})` : ''}.`,
      cause === undefined ? undefined : { cause },
    );
    this.library = library;
  }
}

/**
 * A node's settings can break mutual exclusion (an eviction policy that may drop lock keys),
 * and the locker was told to refuse such nodes (`onEvictionRisk: 'refuse'`). No lock is
 * granted on that locker again: the verdict is kept, so make a new Locker once the node is fixed.
 */
export class UnsafeNodeError extends LockError {
  readonly node: string;

  constructor(node: string, problem: string) {
    super('UNSAFE_NODE', `Refusing ${node}: ${problem}.`);
    this.node = node;
  }
}

/** The nodes' errors as one `cause`, without a stack of its own: it would repeat its owner's. */
function nodeErrors(errors: readonly Error[]): AggregateError {
  const aggregate = new AggregateError(errors, 'node errors');
  aggregate.stack = `${aggregate.name}: ${aggregate.message}`;
  return aggregate;
}

function summarize(nodes: readonly NodeResult[]): string {
  if (nodes.length === 0) return '';
  const parts = nodes.map((n) => `${n.node}: ${describeResult(n)}`);
  return `Nodes: ${parts.join('; ')}.`;
}

function describeResult(n: NodeResult): string {
  if (n.outcome === 'yes') return 'yes';
  if (n.outcome === 'timeout') return `no answer within ${n.timeoutMs} ms`;
  if (n.outcome === 'error') return n.error.message.replace(/\.$/, ''); // summarize adds one
  return n.holderRemainingMs === undefined
    ? 'refused'
    : `held by another for ${n.holderRemainingMs} ms more`;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `\`${JSON.stringify(value)}\` (string)`;
  if (typeof value === 'bigint') return `\`${value}n\` (bigint)`;
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) {
    return `\`${String(value)}\` (${value === null ? 'null' : typeof value})`;
  }
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  return `a value of type ${typeof value}`;
}
