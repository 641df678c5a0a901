import { monotonicClock } from './clock.js';
import { acquireSettings } from './config/acquire-settings.js';
import {
  type ForceReleaseOptions,
  type InspectOptions,
  type ListOptions,
  listOptions,
  operatorTimeout,
} from './config/inspect-options.js';
import { resolveNodes } from './config/node-specs.js';
import { namesOf, rejectUnknownOptions } from './config/option-names.js';
import {
  type AcquireOptions,
  type LockerOptions,
  lockerSettings,
  validateResource,
} from './config/options.js';
import type { RedisConnection } from './driver/connection.js';
import { CONNECT_WAIT_MS } from './driver/connection.js';
import { StallGuard } from './driver/stall-guard.js';
import { acquireLock } from './engine/acquire.js';
import type { LockContext } from './engine/context.js';
import { countedNodes } from './engine/counted-nodes.js';
import type { ForceReleaseResult } from './engine/events.js';
import { LockerEmitter, warn } from './engine/events.js';
import { evictionCheck } from './engine/eviction.js';
import type { Lock } from './engine/lock.js';
import { NodeIdentities } from './engine/node-identity.js';
import { Shutdown } from './engine/shutdown.js';
import { newLockerId } from './engine/token.js';
import { WakeUps } from './engine/wake-ups.js';
import { withLock } from './engine/with-lock.js';
import { InvalidArgumentError, LockBusyError, LockerClosedError } from './errors.js';
import { type ListedResource, listResources } from './inventory/list.js';
import { Election } from './kinds/election/election.js';
import { type ElectionOptions, electionSettings } from './kinds/election/election-options.js';
import { acquireAll } from './kinds/mutex/acquire-all.js';
import { forceReleaseLock } from './kinds/mutex/force-release.js';
import { inspectLock, type LockInspection } from './kinds/mutex/inspect.js';
import type { MultiLock } from './kinds/mutex/multi-lock.js';
import { lockTarget, mutexKind } from './kinds/mutex/mutex-kind.js';
import { ReadWriteLock } from './kinds/rwlock/read-write-lock.js';
import { Semaphore, type SemaphoreOptions } from './kinds/semaphore/semaphore.js';

/**
 * Hands out locks on one set of Redis nodes: one node for the single-instance lock, or N
 * independent masters for Redlock (a majority must agree).
 *
 * @example
 * ```ts
 * const locker = new Locker({ nodes: ['redis://127.0.0.1:6379'] });
 * const lock = await locker.acquire('invoice:42', { ttlMs: 10_000 });
 * try {
 *   // ... work that must finish within lock.remainingMs()
 * } finally {
 *   await lock.release();
 * }
 * ```
 */
export class Locker {
  /**
   * Lifecycle events: `acquired`, `retry`, `extended`, `released`, `lost`, each with the
   * resource, timings and per-node results (never the token); `forceReleased`, after
   * {@link Locker.forceRelease}; and `warning`, when a node
   * puts locks at risk: its eviction policy, a restart or failover (another `run_id`), or an
   * address that now reaches the same server as another node.
   */
  readonly events = new LockerEmitter();
  readonly #context: LockContext;
  readonly #owned: readonly RedisConnection[];
  #closing: Promise<void> | undefined;

  /** Validates `options` synchronously (throws `InvalidArgumentError`), then connects. */
  constructor(options: LockerOptions) {
    const settings = lockerSettings(options);
    const { connections, owned } = resolveNodes(options.nodes, options.tls, settings.replicaAcks);
    const nodes = connections.map((connection) => new StallGuard(connection, monotonicClock));
    const nodeName = (index: number) => nodes[index]?.name ?? '';
    const wakeUps = new WakeUps(connections, {
      prefix: settings.prefix,
      id: newLockerId(),
      warn: (code, message, node = 0) => warn(this.events, nodeName(node), code, message),
    });
    let connecting: Promise<void> | undefined;
    let isConnected = false;
    // Once settled, the hot path skips even the await of a resolved promise.
    const connected = () => {
      if (isConnected) return undefined;
      connecting ??= Promise.all(connections.map((c) => c.connect?.(CONNECT_WAIT_MS))).then(() => {
        isConnected = true;
      });
      return connecting;
    };
    this.#context = {
      nodes,
      settings,
      clock: monotonicClock,
      events: this.events,
      wakeUps,
      shutdown: new Shutdown(),
      identities: new NodeIdentities(nodes.length, {
        inspect: evictionCheck(settings.onEvictionRisk, nodeName, this.events),
        mustInspect: settings.onEvictionRisk === 'refuse',
        restartGraceMs: settings.restartGraceMs,
        warn: (index, code, message) => warn(this.events, nodeName(index), code, message),
      }),
      connected,
      startedAt: monotonicClock.now(),
    };
    this.#owned = owned;
  }

  /** Names of the nodes, in the order given (`host:port`, `cluster ...`, `sentinel ...`). */
  get nodes(): readonly string[] {
    return this.#context.nodes.map((node) => node.name);
  }

  /**
   * Acquires `resource`, retrying while it is busy for up to `waitMs`. Bad arguments throw
   * synchronously. Rejects with `AcquireTimeoutError` (still busy when the wait ran out),
   * `LockBusyError` (busy and `waitMs: 0`), `NoQuorumError` (nodes failed, at once when nodes
   * never reached refuse connections: see `startupWaitMs`), `AbortedError`,
   * `LockerClosedError`, or `UnsafeNodeError` (`onEvictionRisk: 'refuse'` refused a node).
   */
  acquire(resource: string, options: AcquireOptions): Promise<Lock> {
    const settings = acquireSettings(resource, options, this.#context.settings);
    return acquireLock(this.#context, lockTarget(this.#context, resource), settings);
  }

  /**
   * One attempt: resolves the `Lock`, or `null` when another holder has the resource.
   * Node failures still reject with `NoQuorumError`.
   */
  tryAcquire(resource: string, options: Omit<AcquireOptions, 'waitMs'>): Promise<Lock | null> {
    const settings = acquireSettings(resource, options, this.#context.settings, {
      method: 'tryAcquire',
    });
    return acquireLock(this.#context, lockTarget(this.#context, resource), settings).catch(
      (error: unknown) => {
        if (error instanceof LockBusyError) return null;
        throw error;
      },
    );
  }

  /**
   * Runs `work` under the lock: acquires (waiting as `acquire` does), extends automatically,
   * hands `work` the lock's lost-lock signal, and always releases, also when `work` throws.
   * Resolves with `work`'s result; rejects with the `LockLostError` if the lock was lost while
   * `work` ran (its result was then computed without the lock's protection).
   *
   * @example
   * ```ts
   * await locker.withLock('report', { ttlMs: 5_000 }, async (signal) => {
   *   await buildReport({ signal }); // stop when signal aborts
   * });
   * ```
   */
  withLock<T>(
    resource: string,
    options: AcquireOptions,
    work: (signal: AbortSignal) => Promise<T> | T,
  ): Promise<T> {
    if (typeof work !== 'function') throw new InvalidArgumentError('work', 'a function', work);
    const settings = acquireSettings(resource, options, this.#context.settings, {
      method: 'withLock',
    });
    return withLock(
      acquireLock(this.#context, lockTarget(this.#context, resource), settings),
      work,
    );
  }

  /**
   * Acquires every one of `resources`, or none: a lock per resource, taken in sorted order.
   * When one is busy it gives back what it took and waits holding nothing; from its second
   * round it may instead wait for a resource that sorts after all it holds. So two callers
   * never wait for each other (no deadlock). Works across Redis Cluster slots.
   * Rejects as `acquire` does, naming the resource that stayed busy.
   *
   * @example
   * ```ts
   * await using both = await locker.acquireAll(['account:1', 'account:2'], { ttlMs: 5_000 });
   * // ... move money between the two accounts
   * ```
   */
  acquireAll(resources: readonly string[], options: AcquireOptions): Promise<MultiLock> {
    if (!Array.isArray(resources) || resources.length === 0) {
      throw new InvalidArgumentError('resources', 'a non-empty array of resource names', resources);
    }
    for (const [i, resource] of resources.entries()) validateResource(resource, `resources[${i}]`);
    const sorted = [...resources].sort();
    const repeated = sorted.find((resource, i) => sorted[i + 1] === resource);
    if (repeated !== undefined) {
      throw new InvalidArgumentError('resources', 'distinct names', repeated);
    }
    const settings = acquireSettings(sorted[0] as string, options, this.#context.settings, {
      method: 'acquireAll',
    });
    return acquireAll(this.#context, sorted, settings);
  }

  /**
   * A counting semaphore on these nodes: up to `permits` holders of `name` at once (see
   * {@link Semaphore}). Validates its arguments synchronously; does no I/O.
   *
   * @example
   * ```ts
   * const pool = locker.semaphore('db-pool', { permits: 3 });
   * await pool.withPermit({ ttlMs: 10_000 }, async (signal) => runQuery({ signal }));
   * ```
   */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    validateResource(name, 'name');
    if (typeof options !== 'object' || options === null) {
      throw new InvalidArgumentError('options', 'an object with `permits`', options);
    }
    rejectUnknownOptions(options, namesOf<SemaphoreOptions>({ permits: true }), 'semaphore');
    const { permits } = options;
    if (!Number.isSafeInteger(permits) || (permits as number) < 1) {
      throw new InvalidArgumentError('permits', 'an integer >= 1', permits);
    }
    return new Semaphore(this.#context, name, permits as number);
  }

  /**
   * A read-write lock on these nodes: many readers of `name` at once, or one writer, served
   * in arrival order (see {@link ReadWriteLock}). Validates `name` synchronously; no I/O.
   */
  readWriteLock(name: string): ReadWriteLock {
    validateResource(name, 'name');
    return new ReadWriteLock(this.#context, name);
  }

  /**
   * Reads the lock on `resource` on every node, without taking it: held or free, for how
   * long, its fence counter and how many wait in line, per node and in summary; never the
   * holder's token. Each node gets at most `timeoutMs`; one that fails or stays silent is
   * reported with its cause, so this never rejects for a node. Once they answered, it checks
   * which server each node is (`INFO`, when due: a new locker's first read, or after a
   * reconnect; a node silent for that too costs as much again), as {@link Election.leader}
   * does: one server listed twice rejects with an `InvalidArgumentError` naming it, and a node
   * that became another server (a failover, a restart with its data) is reported with why, not
   * with what it answered, until every lease the earlier one could have granted has run out.
   * Locks only: a semaphore or read-write lock of the same name has keys of its own, which
   * this does not read.
   *
   * @example
   * ```ts
   * const { state, remainingMs, waiters } = await locker.inspect('report');
   * ```
   */
  inspect(resource: string, options?: InspectOptions): Promise<LockInspection> {
    validateResource(resource, 'resource');
    const timeoutMs = operatorTimeout(options, 'inspect');
    if (this.#context.shutdown.closed) {
      return Promise.reject(new LockerClosedError(`Inspecting "${resource}"`));
    }
    return inspectLock(countedNodes(this.#context, timeoutMs), resource, timeoutMs);
  }

  /**
   * For operators: every resource under the locker's prefix that is held or waited for
   * (locks, `schedule()` ticks, semaphores, read-write locks, elections), in name order, with
   * who holds it, for how long, its fence or term and its waiters, as a majority of the nodes
   * sees it. Keys are found with `SCAN` on every node (every master of a Redis Cluster), never
   * `KEYS`; each resource found then costs one read per node (two for a read-write lock or an
   * election). Bad options throw before any I/O; fewer than a majority of nodes scanned
   * rejects with `NoQuorumError`; a node that fails a read is named in that resource's
   * `unreachable`. It counts the nodes as {@link inspect} does: one server listed twice
   * rejects with an `InvalidArgumentError`, and a node that became another server is named
   * in `unreachable`, with why.
   *
   * @example
   * ```ts
   * for await (const { kind, name, owners, remainingMs } of locker.list({ match: 'report:*' })) {
   *   console.log(kind, name, owners.join(', '), remainingMs);
   * }
   * ```
   */
  list(options?: ListOptions): AsyncIterable<ListedResource> {
    const settings = listOptions(options);
    if (this.#context.shutdown.closed) throw new LockerClosedError('Listing locks');
    return listResources(this.#context, settings);
  }

  /**
   * For operators: ends the lock on `resource` on every node, whoever holds it (a holder that
   * hangs, a lease far too long). Where waiters are in line the lock goes at once to the
   * first of them, otherwise it is deleted. The old holder is not told: its next `extend()`
   * (or auto-extension) rejects with `LockLostError` and its `signal` fires, its `release()`
   * resolves `'not-held'`; until then it may still believe it holds the lock, so use this
   * only on a holder known to be stuck, or with fencing. Emits `forceReleased`. Never rejects
   * for a node: each node's part is in the result.
   *
   * @example
   * ```ts
   * const { result } = await locker.forceRelease('report'); // 'released' or 'not-held'
   * ```
   */
  forceRelease(resource: string, options?: ForceReleaseOptions): Promise<ForceReleaseResult> {
    validateResource(resource, 'resource');
    const timeoutMs = operatorTimeout(options, 'forceRelease');
    if (this.#context.shutdown.closed) {
      return Promise.reject(new LockerClosedError(`Force-releasing "${resource}"`));
    }
    return forceReleaseLock(this.#context, resource, timeoutMs);
  }

  /**
   * A leader election on these nodes (see {@link Election}): `campaign` to lead, `leader()`
   * and `observe()` to follow who leads. Validates its arguments synchronously (the timings:
   * `renewDeadlineMs < leaseMs`, `retryMs < renewDeadlineMs`); does no I/O.
   *
   * @example
   * ```ts
   * const election = locker.election('scheduler', { leaseMs: 15_000 });
   * const leadership = await election.campaign('worker-7');
   * ```
   */
  election(name: string, options?: ElectionOptions): Election {
    validateResource(name, 'name');
    const settings = electionSettings(options, this.#context.settings);
    return new Election(this.#context, name, settings, mutexKind); // leadership is a lock
  }

  /**
   * Shuts the locker down, in this order:
   * - every wait still running rejects with `LockerClosedError` (a waiter in line leaves it
   *   first), and so does every later `acquire`, `tryAcquire`, `withLock` or `extend`;
   * - every lock it still holds is released (a `released` event each), and its `signal` fires
   *   with a `LockLostError`, since another client may now take the resource: work still
   *   running under it must stop. A later `release()` of such a lock resolves `'not-held'`;
   * - then the connections it opened from URLs close; clients passed in stay open.
   *
   * Releasing rather than leaving the keys to expire means a graceful shutdown never makes
   * other processes wait out a TTL. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    // Started on the next tick: a lock's signal fires during the close, and a listener that
    // calls close() again must find this promise already in place.
    this.#closing ??= Promise.resolve().then(() => this.#close());
    return this.#closing;
  }

  async #close(): Promise<void> {
    await this.#context.shutdown.close();
    await this.#context.wakeUps.close();
    await Promise.all(this.#owned.map((node) => node.close()));
  }
}
