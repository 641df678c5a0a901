import { type AcquireSettings, acquireSettings } from '../../config/acquire-settings.js';
import { acquireLock } from '../../engine/acquire.js';
import type { LockContext } from '../../engine/context.js';
import type { HoldKind } from '../../engine/contract.js';
import { LockLostError, NoQuorumError } from '../../errors.js';
import { type ElectionKeys, keysOf } from './election-keys.js';
import {
  type ElectionOptions,
  type ElectionSettings,
  signalOption,
  validateValue,
} from './election-options.js';
import { type Leader, readLeader } from './leader-read.js';
import { Leadership } from './leadership.js';
import { observeLeader } from './observe.js';

/** Options of {@link Election.campaign} and {@link Election.observe}. */
export interface ElectionWaitOptions {
  /** Stops the wait: `campaign` then rejects with an `AbortedError`; `observe` ends. */
  signal?: AbortSignal;
}

/**
 * A leader election among the clients of these nodes: at most one leader at a time, each
 * with a term (a fencing token larger than every earlier leader's) and a value it proclaims
 * (who it is, where to reach it). Leadership is a fenced lock on the election, renewed every
 * `retryMs`: it inherits Redlock's majority, validity and waiting line.
 *
 * @example
 * ```ts
 * const election = locker.election('scheduler', { leaseMs: 15_000 });
 * const leadership = await election.campaign('worker-7');
 * await runScheduler({ signal: leadership.signal, term: leadership.term });
 * await leadership.resign();
 * ```
 */
export class Election {
  /** The election's name, as given to `locker.election`. */
  readonly name: string;
  readonly #context: LockContext;
  readonly #keys: ElectionKeys;
  readonly #settings: ElectionSettings;
  /** The lock whose fenced hold is the leadership: the facade hands it the mutex kind. */
  readonly #lockKind: HoldKind;

  /** @internal Created by `Locker.election`; not part of the public API. */
  constructor(context: LockContext, name: string, settings: ElectionSettings, lockKind: HoldKind) {
    this.name = name;
    this.#context = context;
    this.#keys = keysOf(context.settings.prefix, name);
    // A leadership's release (resign, loss) ends its leader record on each node in the same
    // step as the hold: a late copy of its own take cannot make a resigned leader read again.
    const record = this.#keys.leader;
    this.#lockKind = {
      ...lockKind,
      release: (node, hold, timeoutMs) => lockKind.release(node, { ...hold, record }, timeoutMs),
    };
    this.#settings = settings;
  }

  /** The election's timings, with defaults applied. */
  get timings(): Readonly<Required<ElectionOptions>> {
    return this.#settings;
  }

  /**
   * Waits until this client leads, then proclaims `value` and resolves its
   * {@link Leadership}. Candidates wait in line in arrival order: a leader that resigns hands
   * over at once to the one that waited longest; one that dies is replaced when its lease
   * ends. Rejects with `AbortedError` when `signal` aborts and `LockerClosedError` when the
   * locker closes (having left the line either way), and with `NoQuorumError` when nodes the
   * locker never reached refuse connections (see the locker's `startupWaitMs`); arguments
   * are checked synchronously.
   */
  campaign(value: string, options?: ElectionWaitOptions): Promise<Leadership> {
    validateValue(value);
    const signal = signalOption(options, 'Election.campaign');
    const { leaseMs } = this.#settings;
    const acquire = acquireSettings(
      this.name,
      // Renewed by the leadership itself (every retryMs), never cut short by maxHoldMs; fair,
      // so that a resigning leader campaigning again goes behind those already waiting.
      { ttlMs: leaseMs, waitMs: Number.POSITIVE_INFINITY, fencing: true, fair: true, signal },
      this.#context.settings,
      { method: 'acquire', name: 'Election.campaign' },
    );
    return this.#campaign(value, { ...acquire, maxHoldMs: Number.POSITIVE_INFINITY });
  }

  /**
   * Reads the current leader from every node: the one a majority of nodes agrees on, or
   * `null` when there is none (no leader, a lease that ran out, a leader that resigned, or a
   * new leader that has not proclaimed yet). A node counts only as it would vote in a
   * campaign: not while it sits out votes after its server changed (a restart, a failover),
   * nor before it said which server it is. Rejects with `NoQuorumError` when fewer than a
   * majority of nodes answered, and with the campaigns' `InvalidArgumentError` when one server
   * is listed twice. Writes nothing (a user that may only read can call it).
   */
  leader(): Promise<Leader | null> {
    return readLeader(this.#context, this.#keys, this.#settings.leaseMs);
  }

  /**
   * The leader now, then each change (a new value, a new term, or `null` for none), as an
   * async iterable. Woken by a change message over pub/sub, and reading again every `retryMs`
   * whatever happens, so that a lost message or a lease that ran out unannounced costs at
   * most `retryMs` plus one read (the per-node timeout). Changes closer together than one
   * read may be seen as one. Ends when `signal` aborts, the locker closes, or the loop stops.
   *
   * @example
   * ```ts
   * for await (const leader of election.observe({ signal })) {
   *   console.log(leader ? `${leader.value} leads (term ${leader.term})` : 'no leader');
   * }
   * ```
   */
  observe(options?: ElectionWaitOptions): AsyncIterable<Leader | null> {
    const signal = signalOption(options, 'Election.observe');
    return {
      [Symbol.asyncIterator]: () =>
        observeLeader(this.#context, this.#keys, this.#settings, signal),
    };
  }

  async #campaign(value: string, settings: AcquireSettings): Promise<Leadership> {
    const target = { kind: this.#lockKind, resource: this.name, key: this.#keys.lock };
    for (;;) {
      const lock = await acquireLock(this.#context, target, settings);
      const leadership = new Leadership(this.#context, lock, this.#keys, this.#settings);
      try {
        await leadership.proclaim(value);
        return leadership;
      } catch (error) {
        // Nodes failed right after the election: step down, and campaign again.
        await leadership.resign();
        if (!(error instanceof NoQuorumError || error instanceof LockLostError)) throw error;
      }
    }
  }
}
