import { validateDuration, validateTtl } from '../config/options.js';
import { LockerClosedError, LockLostError, NoQuorumError } from '../errors.js';
import type { NodeResult } from '../node-result.js';
import { driftMs } from '../quorum/validity.js';
import type { LockContext } from './context.js';
import type { Lease, ReleaseResult } from './contract.js';
import { nodeTimeoutFor } from './every-node.js';
import { extendLease } from './extend.js';
import { LossSignal, validityRanOut } from './loss-signal.js';
import { type ReleaseOutcome, releaseLease } from './release.js';
import { traced, tracedRelease } from './telemetry.js';
import { labelOf } from './token.js';
import { Watchdog } from './watchdog.js';

let renewal: (lock: Lock, ttlMs: number) => Promise<boolean>;

/**
 * Extends `lock` to `ttlMs` from now, as a renewal that may be retried: resolves `true` when a
 * majority confirmed, `false` when nodes failed or did not answer (the lease then stands
 * until its current deadline, and its signal still fires there), and rejects with
 * `LockLostError` when a majority said the hold is no longer ours. Internal: elections renew
 * this way; `Lock.extend` treats any failure as a loss.
 */
export function renewLock(lock: Lock, ttlMs: number): Promise<boolean> {
  return renewal(lock, ttlMs);
}

let leaseOfLock: (lock: Lock) => Readonly<Lease>;

/** Which hold `lock` is: for kinds whose scripts act on the holder's key (an election's proclaim). */
export function leaseOf(lock: Lock): Readonly<Lease> {
  return leaseOfLock(lock);
}

/** How a new {@link Lock} keeps itself alive. */
export interface LockLifecycle {
  /** Extend automatically until released or until `maxHoldMs` after acquisition. */
  readonly autoExtend: boolean;
  readonly maxHoldMs: number;
}

/**
 * A held lock. Trust it only while {@link Lock.remainingMs} is above zero (or, equivalently,
 * until {@link Lock.signal} aborts): past that another client may hold the same resource.
 */
export class Lock implements AsyncDisposable {
  /** The locked resource's name, as given to `acquire`. */
  readonly resource: string;
  readonly #context: LockContext;
  readonly #lease: Lease;
  readonly #loss: LossSignal;
  readonly #watchdog: Watchdog | undefined;
  /** Takes this lock off the locker's list of locks to end on close. */
  readonly #unhold: () => void;
  #lossReported = false;
  /** The last release (or expiry) asked for: a later one waits for it to be done. */
  #ending: Promise<unknown> | undefined;

  /** @internal Created by `Locker`; not part of the public API. */
  constructor(context: LockContext, lease: Lease, lifecycle?: LockLifecycle) {
    this.resource = lease.resource;
    this.#context = context;
    this.#lease = lease;
    this.#loss = new LossSignal(lease.resource, context.clock, (error) => this.#lost(error));
    this.#unhold = context.shutdown.hold({
      over: () => this.remainingMs() === 0,
      end: () => this.#endByClose(),
    });
    if (context.settings.telemetry) {
      context.settings.telemetry.held(this.#hold(), { began: true });
      this.#loss.watch(lease.deadline); // a hold that runs out unreleased is reported lost
    }
    if (lifecycle?.autoExtend) {
      const { ttlMs } = lease;
      const minTtlMs = Math.max(
        nodeTimeoutFor(context, ttlMs),
        driftMs(ttlMs, context.settings.driftFactor),
      );
      this.#watchdog = new Watchdog(
        () => context.clock.now(),
        (ttl) => this.extend(ttl),
        ttlMs,
        lease.acquiredAt + lifecycle.maxHoldMs,
        minTtlMs,
      );
      this.#watchdog.schedule(lease.deadline);
      this.#loss.watch(lease.deadline); // an auto-extended lock always watches its deadline
    }
  }

  /**
   * Aborts with a `LockLostError` as soon as the lock can no longer be proven valid: an
   * extension failed, or the validity deadline passed without one. Stop using the protected
   * resource when it fires. Releasing the lock does not abort it. Read after the deadline, it
   * is already aborted, even if a busy event loop kept its timer from running: the loss is
   * then reported (abort listeners, the `lost` event) during this read.
   */
  get signal(): AbortSignal {
    return this.#loss.signal(this.#lease.deadline);
  }

  /**
   * The fencing token (with `fencing: true`): larger than the token of every earlier holder
   * of this resource. Send it with each write to the protected resource and have the resource
   * refuse writes that carry a smaller one (see `fencedWrite`). `undefined` without fencing.
   */
  get fence(): bigint | undefined {
    return this.#lease.fence;
  }

  /**
   * Who holds this lock, as `inspect()` and `distlock status` show it: the acquisition's or
   * the locker's `owner` label; `undefined` for a locker made with `owner: false`.
   */
  get owner(): string | undefined {
    return labelOf(this.#lease.token)?.owner;
  }

  /** Milliseconds of validity left, by the monotonic clock; 0 once expired, lost or released. */
  remainingMs(): number {
    if (this.#lease.status !== 'held') return 0;
    return Math.max(0, this.#lease.deadline - this.#context.clock.now());
  }

  /**
   * Extends the lease to `ttlMs` from now (default: the TTL it was acquired with).
   * Rejects with a `LockLostError` when a majority of nodes no longer confirms our hold;
   * the lock is then lost for good and its signal fires. Rejects with a `NoQuorumError`
   * ("a configuration error") when nodes refused the extension itself, so that no majority
   * could answer (an ACL user without `+pexpire`: its node error names the command): the lock
   * is then still held until its current validity runs out, when its signal fires.
   */
  extend(ttlMs: number = this.#lease.ttlMs): Promise<void> {
    return this.#extend(ttlMs, false).then(() => undefined);
  }

  static {
    renewal = (lock, ttlMs) => lock.#extend(ttlMs, true).then((results) => results !== undefined);
    leaseOfLock = (lock) => lock.#lease;
  }

  /** Extends; with `unconfirmedIsKept`, resolves `undefined` for a retryable failure. */
  #extend(
    ttlMs: number,
    unconfirmedIsKept: boolean,
  ): Promise<readonly (NodeResult | undefined)[] | undefined> {
    validateTtl('ttlMs', ttlMs, this.#context.settings);
    if (this.#context.shutdown.closed) {
      return Promise.reject(new LockerClosedError(`Extending "${this.resource}"`));
    }
    const { shutdown, settings } = this.#context;
    // The restart grace covers this lease too: a longer one is recorded on the nodes first.
    const recording = this.#context.identities.noteTtl(ttlMs);
    const extendNow = () =>
      extendLease(
        this.#context,
        this.#lease,
        ttlMs,
        (error) => this.#lost(error),
        unconfirmedIsKept,
      );
    const extending = recording ? () => recording.then(extendNow) : extendNow;
    const { telemetry } = settings;
    const run = telemetry
      ? () =>
          traced(telemetry, 'extend', this.#hold(), extending, {
            ok: (nodes) => ({ outcome: nodes ? 'extended' : 'unconfirmed', nodes: nodes ?? [] }),
            failed: (error) => ({
              outcome: error instanceof LockLostError ? 'lost' : 'error',
              error: error as Error,
            }),
          })
      : extending;
    return shutdown.track(run).then(
      (results) => {
        if (!results) return undefined; // not confirmed: the lease stands until its deadline
        this.#loss.arm(this.#lease.deadline);
        this.#watchdog?.schedule(this.#lease.deadline);
        this.#context.events.report('extended', () => ({
          resource: this.resource,
          validityMs: this.#lease.deadline - this.#context.clock.now(),
          nodes: results,
        }));
        return results;
      },
      (error: unknown) => {
        if (error instanceof LockLostError) this.#lost(error);
        else if (error instanceof NoQuorumError) {
          this.#loss.cannotExtend(`the last extension failed: ${error.message}`);
        }
        throw error;
      },
    );
  }

  /**
   * Deletes the lock on every node and stops auto-extension (before `minHoldMs` has passed, it
   * sets the key to expire then instead). Resolves `'released'` once a quorum deleted it,
   * `'not-held'` when it had already expired, been taken or been released, and `'failed'`
   * when too many nodes failed or stayed silent to tell (the `released` event says why; the
   * key then frees itself at its TTL). Never rejects because the lease ran out. Rejects with
   * a `NoQuorumError` ("a configuration error") when nodes refused the release itself so
   * that no majority could do it (an ACL user without `+del`: its node error names the
   * command): retrying cannot fix that. The `released` event still reports `'failed'`.
   */
  release(): Promise<ReleaseResult> {
    return this.#end(undefined);
  }

  /**
   * Releases the lock `keepMs` from now: the holder is done with it at once (auto-extension
   * and the signal stop), while the key stays on the nodes and expires by itself after
   * exactly `keepMs`, so that nobody takes the resource before then (how a scheduled job
   * keeps its tick locked for `lockAtLeastFor`); never sooner than `minHoldMs` after
   * acquisition. Resolves as {@link Lock.release} does.
   *
   * @example
   * ```ts
   * await lock.releaseAfter(60_000); // at most one run per minute, however short it was
   * ```
   */
  releaseAfter(keepMs: number): Promise<ReleaseResult> {
    validateDuration('keepMs', keepMs);
    return this.#end(keepMs);
  }
  /**
   * @internal Keeps the key until at least `instant` (monotonic) however the lock ends, by a
   * release or by its locker's close: how `acquireAll` holds a complete group for `minHoldMs`.
   */
  keepKeyUntil(instant: number): void {
    this.#lease.keepUntil = Math.max(this.#lease.keepUntil, instant);
  }

  /** Releases the lock at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** The locker closes: release, and tell work still running under the lock to stop. */
  #endByClose(): Promise<ReleaseResult> {
    // Released first: a listener may call release(). A release the nodes refused (NOPERM)
    // does not stop the close: the `released` event names why, and the key expires.
    const ending = this.#end(undefined).catch((): ReleaseResult => 'failed');
    this.#loss.lose(new LockLostError(this.resource, 'its locker was closed, which released it'));
    return ending;
  }

  /** Releases now, or lets the key expire in `keepMs` (never before `minHoldMs` passed). */
  #end(keepMs: number | undefined): Promise<ReleaseResult> {
    const now = this.#context.clock.now();
    if (this.#lease.status === 'held' && now >= this.#lease.deadline) {
      // Released after its validity ran out, before its deadline timer could run (a busy
      // event loop), or with none armed: the work went on unprotected, so it is a loss.
      this.#lost(validityRanOut(this.resource));
    }
    this.#unhold();
    this.#watchdog?.stop();
    this.#loss.stop();
    this.#context.wakeUps.releasing();
    const floorMs = Math.ceil(this.#lease.keepUntil - now);
    const keep = Math.max(keepMs ?? 0, floorMs);
    const releasing = () => releaseLease(this.#context, this.#lease, keep > 0 ? keep : undefined);
    const { telemetry } = this.#context.settings;
    if (telemetry && this.#lease.status === 'held') {
      telemetry.held(this.#hold(), { ended: 'released', heldMs: this.#heldMs() });
    }
    const ending = telemetry ? () => tracedRelease(telemetry, this.#hold(), releasing) : releasing;
    // A release asked for while another is on its way (the locker's close, then acquireAll
    // giving back what it took) resolves once a quorum's keys are gone, not before.
    const previous = this.#ending;
    const after = previous
      ? () =>
          previous.then(
            () => ending(),
            () => ending(),
          )
      : ending;
    // Tracked until every node answered (the locker's close waits for the last delete), which
    // on N nodes may be after the release resolved at its majority.
    const done = this.#context.shutdown.track(after, (outcome) => this.#released(outcome));
    this.#ending = done;
    return done;
  }

  /** A release's outcome, once known: reported (see `#end`), before its operation ends. */
  #released({ result, nodes, refused, everyNode }: ReleaseOutcome): ReleaseResult {
    const { events, shutdown } = this.#context;
    if (everyNode) {
      shutdown.begin(); // before the release's own end: the count never drops to 0 between
      everyNode.then(() => shutdown.end());
    }
    events.report('released', () => ({
      resource: this.resource,
      result,
      heldMs: this.#heldMs(),
      nodes,
    }));
    if (refused) throw refused;
    return result;
  }

  #lost(error: LockLostError): void {
    if (this.#lease.status === 'released' || this.#lossReported) return;
    this.#lossReported = true;
    if (this.#lease.status === 'held') {
      const heldMs = this.#heldMs();
      this.#context.settings.telemetry?.held(this.#hold(), { ended: 'lost', heldMs });
    }
    this.#unhold();
    this.#lease.status = 'lost';
    this.#watchdog?.stop();
    this.#loss.lose(error);
    this.#context.events.report('lost', () => ({
      resource: this.resource,
      error,
      heldMs: this.#heldMs(),
      ...labelOf(this.#lease.token),
    }));
  }

  #hold() {
    return { resource: this.resource, kind: this.#lease.kind.noun };
  }

  #heldMs(): number {
    return this.#context.clock.now() - this.#lease.acquiredAt;
  }
}
