import type { NodeResult } from '../node-result.js';

/** What a telemetry operation is about: never a token. */
export interface HoldInfo {
  /** The resource's name (a lock's resource, a semaphore's or read-write lock's name). */
  readonly resource: string;
  /** What is held: `lock`, `permit`, `read lock`, `write lock`. */
  readonly kind: string;
}

/** How an operation ended, for its span and metrics. */
export interface OperationEnd {
  /** `acquired`, `busy`, `timeout`, `no_quorum`, `aborted`, `closed`, `extended`, `released`... */
  readonly outcome: string;
  readonly attempts?: number;
  /** What each node answered in the last round. */
  readonly nodes?: readonly (NodeResult | undefined)[];
  readonly error?: Error;
}

/** One traced operation (an acquisition, an extension, a release). */
export interface TracedOperation {
  /** Runs `work` with this operation as the active span: the Redis client's spans nest in it. */
  run<T>(work: () => T): T;
  end(end: OperationEnd): void;
}

/**
 * Where distlock reports what it does: spans and metrics (see `distlock/opentelemetry`). A
 * locker without one (the default) pays one `undefined` check per operation.
 */
export interface LockTelemetry {
  start(operation: 'acquire' | 'extend' | 'release', hold: HoldInfo): TracedOperation;
  /** A hold began (`acquired`), or ended after `heldMs`, released or lost. */
  held(
    hold: HoldInfo,
    change:
      | { readonly began: true }
      | { readonly ended: 'released' | 'lost'; readonly heldMs: number },
  ): void;
}
