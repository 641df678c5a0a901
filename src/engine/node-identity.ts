import { NotSentError } from '../driver/connection.js';
import { driftMs } from '../quorum/validity.js';
import { abstentionError } from './abstention.js';
import type { WarningCode } from './events.js';
import type { NodeSet } from './every-node.js';
import type { IdentityBook, ServerInspection } from './identity-book.js';
import { abstentionReason, type IdentityChange } from './identity-change.js';
import { CLUSTER_RECHECK_MS, IDENTITY_RECHECK_MS, readOnCurrent } from './identity-due.js';
import { IdentityRounds } from './identity-rounds.js';
import { type Identity, newIdentity } from './identity-state.js';
import { LeaseRecords } from './lease-records.js';

export type { ServerInspection } from './identity-book.js';
export { CLUSTER_RECHECK_MS, IDENTITY_RECHECK_MS };

/** How a locker checks which server each node is. */
export interface IdentityOptions {
  readonly inspect?: ServerInspection;
  /**
   * No node votes before `inspect` saw its INFO, even a single one (for checks that refuse a
   * node, which nothing may bypass).
   */
  readonly mustInspect?: boolean;
  /**
   * `restartGraceMs`, when given; by default the longest lease on record on the nodes (see
   * {@link LeaseRecords}), or this locker's longest TTL if that is longer.
   */
  readonly restartGraceMs?: number | undefined;
  /** Reports a warning about node `index`. */
  readonly warn?: (index: number, code: WarningCode, message: string) => void;
}

/**
 * Which server each node is, by its `run_id` (INFO), so that a node votes as itself only:
 * - two URLs or clients that reach one server (`127.1` and `LOCALHOST`, a second client...)
 *   cannot count twice towards a majority: found before the first lock, that refuses every
 *   acquisition; found later (an address re-pointed at another listed server), the node
 *   that changed abstains while it lasts, with a `NODE_DUPLICATE` warning;
 * - a node is asked again whenever its connection was (re)established (or failed, or, when
 *   its connection cannot tell, every {@link IDENTITY_RECHECK_MS}), and gets no acquisition
 *   request until it answered on the new connection;
 * - a node that answers as another server (it restarted, or failed over) may have lost the
 *   locks it held: on two nodes or more it abstains until every lease it could have granted
 *   has run out (the restart grace: `restartGraceMs`, by default the longest lease on record
 *   on the nodes, see {@link LeaseRecords}), and a `NODE_IDENTITY_CHANGED` warning names it;
 *   on one node, only the warning, unless `restartGraceMs` is given;
 * - a node first seen that may have been up for less than the grace abstains too (so that a
 *   fresh process, such as the CLI, keeps out of a restarted node): with `restartGraceMs`
 *   given, always; by default, on two nodes or more, unless its own lease record was kept by
 *   its server.
 *
 * Asked before every acquisition attempt while some node is due; asking never waits for a
 * connection that is not ready, so a down node costs nothing. A Redis Cluster node's masters
 * change by its own failovers: they are asked again, in the background (no vote waits for
 * them), for `inspect` and the duplicate check only, when the cluster names other masters
 * (its `generation`) and every {@link CLUSTER_RECHECK_MS}.
 */
export class NodeIdentities {
  readonly #book: IdentityBook;
  readonly #rounds: IdentityRounds;

  constructor(nodeCount: number, options: IdentityOptions = {}) {
    const { inspect = () => undefined, mustInspect = false, restartGraceMs } = options;
    const strict = restartGraceMs !== undefined && restartGraceMs > 0;
    this.#book = {
      ids: Array.from({ length: nodeCount }, newIdentity),
      records:
        nodeCount > 1 && restartGraceMs === undefined ? new LeaseRecords(nodeCount) : undefined,
      rules: {
        inspect,
        warn: options.warn ?? (() => undefined),
        trustedAtOnce: nodeCount === 1 && !mustInspect && !strict,
        abstainsOnChange: restartGraceMs !== 0 && (nodeCount > 1 || strict),
        restartGraceMs,
      },
      set: undefined,
      refusal: undefined,
      longestTtlMs: 0,
      clockOffsetMs: undefined,
      voting: {
        votes: (index) => this.#votes(index),
        changeWarning: (change, now, before, after) =>
          this.#changeWarning(change, now, before, after),
      },
    };
    this.#rounds = new IdentityRounds(this.#book);
  }

  /**
   * Whether node `index` may vote in an acquisition of a lease of `ttlMs`: it said which
   * server it is (or will not say) on its current connection, does not abstain, and has that
   * lease on record (see {@link LeaseRecords}).
   */
  known(index: number, ttlMs: number): boolean {
    return this.#votes(index) && this.recorded(index, ttlMs);
  }

  /**
   * Whether node `index` has a lease of `ttlMs` on record, as it must before it grants or
   * extends one (always, without lease records, or for a node that will not say its server).
   */
  recorded(index: number, ttlMs: number): boolean {
    const id = this.#book.ids[index] as Identity;
    return (
      !this.#book.records || !Array.isArray(id.runIds) || !this.#book.records.due(index, ttlMs)
    );
  }

  /** {@link known}, but for the lease record that it may still have to get. */
  #votes(index: number): boolean {
    const id = this.#book.ids[index] as Identity;
    if ((id.change || id.duplicateOf !== undefined) && this.#abstains(id)) return false;
    if (id.arrival) return false; // first seen: the lease records tell whether it is young
    if (this.#book.rules.trustedAtOnce) return true;
    if (id.unchecked || this.#book.refusal) return false;
    if (id.runIds === undefined) return false;
    const node = this.#book.set?.nodes[index];
    return id.runIds === null || node === undefined || node.isCluster || readOnCurrent(id, node);
  }

  /**
   * How far the servers' wall clocks are ahead of this process's (ms; the median of the nodes
   * whose INFO said), so that a hold's label gives its start in the servers' time;
   * `undefined` before any said, or when none will (INFO denied, or servers before Redis
   * 6.2: the holder's clock is then all there is).
   */
  clockOffsetMs(): number | undefined {
    return this.#book.clockOffsetMs;
  }

  /** Why node `index` could not be asked yet, when it is not {@link NodeIdentities.known}. */
  failure(index: number): Error | undefined {
    return this.#book.ids[index]?.failure;
  }

  /**
   * Why node `index` does not vote although it said which server it is (it abstains, or its
   * connection was re-established since), as the error of its vote; `undefined` otherwise.
   */
  abstention(index: number, ttlMs = this.#book.longestTtlMs): NotSentError | undefined {
    const id = this.#book.ids[index];
    const set = this.#book.set;
    if (!id || !set) return undefined;
    const { nodes, clock } = set;
    const node = nodes[index];
    const other = id.duplicateOf;
    const change = id.change;
    return abstentionError({
      name: node?.name ?? `nodes[${index}]`,
      duplicateOf:
        other === undefined ? undefined : { index: other, name: nodes[other]?.name ?? '' },
      grace:
        other === undefined && change && this.#abstains(id)
          ? {
              change,
              now: clock.now(),
              graceName: this.#graceName(change),
              until: this.#until(change),
            }
          : undefined,
      reconnected:
        Array.isArray(id.runIds) &&
        node !== undefined &&
        !node.isCluster &&
        !readOnCurrent(id, node),
      failure: id.failure,
      arriving: id.arrival !== undefined,
      unchecked: id.unchecked,
      unrecorded: this.recorded(index, ttlMs)
        ? undefined
        : { ttlMs, failure: this.#book.records?.failure(index) },
    });
  }

  /**
   * Why a reader (`Election.leader`, `Locker.inspect`, `Locker.list`) must not count node
   * `index`'s view now: it would not vote in an acquisition, lease records aside (a read
   * grants nothing). Its server changed (a replica promoted before it got a release may hold
   * a lease that was given back, as well as lack one that was granted) or is another node's,
   * or it has not said which server it is on its current connection (it may be either).
   * `undefined` when its view counts.
   */
  unreadable(index: number): NotSentError | undefined {
    if (this.#votes(index)) return undefined;
    return this.abstention(index, 0) ?? this.unidentified(index);
  }

  /** Why nothing is sent to node `index`, which has not said which server it is yet. */
  unidentified(index: number): NotSentError {
    const name = this.#book.set?.nodes[index]?.name ?? `nodes[${index}]`;
    const cause = this.failure(index);
    const why = cause ? `: ${cause.message}` : '';
    return new NotSentError(`${name} has not said which server it is yet${why}`, { cause });
  }

  /**
   * Notes a lease of `ttlMs` (an extension may ask for more than any acquisition did); returns
   * a promise when it must be recorded on the nodes first (see {@link LeaseRecords}), which
   * never rejects: a node that did not record it votes in no acquisition until it has.
   */
  noteTtl(ttlMs: number): Promise<void> | undefined {
    return this.#rounds.noteTtl(ttlMs);
  }

  /**
   * Resolves once the nodes that answer are known to be distinct servers that `inspect`
   * accepts, or once the caller's own per-node timeout is over in a round started with a
   * longer one (a node unanswered or not yet compared by then does not vote); rejects with an
   * `InvalidArgumentError` naming a duplicate, or with the error `inspect` returned (and so
   * does every later call). Returns `undefined`, so that the
   * caller need not even await, when no node is due to be asked (or, for a single node that
   * votes at once and for Redis Cluster nodes that answered before, while they are asked
   * again in the background). `ttlMs`: the lease the caller is about to ask for, which the
   * nodes' lease records must cover before they vote (see {@link checkForRead} for a read).
   */
  check(context: NodeSet, ttlMs: number): Promise<void> | undefined {
    return this.#rounds.check(context, ttlMs);
  }

  /**
   * {@link check} for a read that grants nothing (`Election.leader`, `Locker.inspect`,
   * `Locker.list`), with the read's per-node timeout: no lease is recorded for it, so that a
   * user who may only read writes nothing.
   */
  checkForRead(context: NodeSet, nodeTimeoutMs: number): Promise<void> | undefined {
    return this.#rounds.checkForRead(context, nodeTimeoutMs);
  }

  /**
   * How long `change` keeps a node out: `restartGraceMs`, or the longest lease on record (and,
   * after a change this locker saw, the longest it asked for itself).
   */
  #graceMs(change: IdentityChange): number {
    if (this.#book.rules.restartGraceMs !== undefined) return this.#book.rules.restartGraceMs;
    if (change.graceMs !== undefined) return change.graceMs;
    return Math.max(this.#book.longestTtlMs, this.#book.records?.fleetLongestMs ?? 0);
  }

  /** The grace of `change`, and where it comes from, for messages. */
  #graceName(change: IdentityChange): string {
    const graceMs = this.#graceMs(change);
    return this.#book.rules.restartGraceMs === undefined
      ? `the ${graceMs} ms restart grace (the longest lease on record on the nodes)`
      : `the ${graceMs} ms restart grace (restartGraceMs)`;
  }

  /** When a node that changed votes again: every lease it could have granted is over. */
  #until(change: IdentityChange): number {
    const graceMs = this.#graceMs(change);
    return change.since + graceMs + driftMs(graceMs, this.#book.set?.settings.driftFactor ?? 0);
  }

  /** Whether `id` abstains now; forgets a change whose grace is over. */
  #abstains(id: Identity): boolean {
    if (id.duplicateOf !== undefined) return true;
    if (!id.change || !this.#book.set) return false;
    if (id.rereading || this.#book.set.clock.now() < this.#until(id.change)) return true;
    id.change = undefined;
    return false;
  }

  #changeWarning(
    change: IdentityChange,
    now: number,
    before: readonly string[],
    after: readonly string[],
  ): string {
    const runIds = `run_id ${before.join(',')}, now ${after.join(',')}`;
    if (this.#book.rules.abstainsOnChange) {
      const grace = this.#graceName(change);
      return `${abstentionReason(change, now, grace, this.#until(change))}; ${runIds}`;
    }
    return (
      `its run_id changed (${runIds}): it restarted or failed over, and may have lost the ` +
      'locks it held, which another client can then take while their holders still hold ' +
      'them. A single node goes on locking: give restartGraceMs to make it abstain that long'
    );
  }
}
