import type { Clock } from '../clock.js';
import { CONNECT_GRACE_MS, NotSentError } from '../driver/connection.js';
import type { StallGuard } from '../driver/stall-guard.js';
import { driftMs } from '../quorum/validity.js';
import { abstentionError } from './abstention.js';
import { findDuplicates } from './duplicate-servers.js';
import type { WarningCode } from './events.js';
import { askEveryNode, type NodeSet, nodeTimeoutFor } from './every-node.js';
import {
  abstentionReason,
  type IdentityChange,
  type InfoRead,
  serverClockOffsetMs,
  youngOnArrival,
} from './identity-change.js';
import { type Identity, newIdentity } from './identity-state.js';
import { isInfoRefused, takeInfo } from './info-answer.js';
import { LeaseRecords, serverName } from './lease-records.js';

/**
 * The locker's check of a server's settings (such as eviction) by its `INFO`, before it takes
 * part in a lock: an error refuses it. `info` is undefined when the server will not say (INFO
 * renamed or denied).
 */
export type ServerInspection = (index: number, info: string | undefined) => Error | undefined;

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
 * How often a node whose connection does not report reconnects is asked again which server
 * it is, while the locker locks.
 */
export const IDENTITY_RECHECK_MS = 1_000;

/**
 * How often the masters of a Redis Cluster node are asked again for their `INFO`, while the
 * locker locks, for settings changed since (an eviction policy set by `CONFIG SET`). They are
 * also asked as soon as the cluster names other masters (a replica promoted), or a command
 * failed with its connection.
 */
export const CLUSTER_RECHECK_MS = 10_000;

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
  readonly #ids: Identity[];
  #checking: Promise<void> | undefined;
  /** The per-node timeout of {@link #checking}. */
  #checkingMs = 0;
  /** Whether {@link #checking} is the locker's first round (see {@link #roundTimeoutMs}). */
  #checkingFirst = false;
  /** Whether {@link #checking} asks only Cluster nodes that answered before: no vote waits. */
  #inBackground = false;
  /** The lease {@link #checking} records, once it has read which (see {@link #settleRecords}). */
  #recordingTtlMs: number | undefined;
  /** Why no lock may be granted: a server listed twice, or one `inspect` refused. */
  #refusal: Error | undefined;
  readonly #inspect: ServerInspection;
  readonly #warn: (index: number, code: WarningCode, message: string) => void;
  /** Whether a node's votes may count before it answered: one node cannot count twice. */
  readonly #trustedAtOnce: boolean;
  /** Whether a node that changed identity abstains for the grace (else: a warning only). */
  readonly #abstainsOnChange: boolean;
  readonly #restartGraceMs: number | undefined;
  /** The longest TTL the locker asked for so far: part of the default restart grace. */
  #longestTtlMs = 0;
  /** The nodes' lease records: on two nodes or more, without `restartGraceMs`. */
  readonly #records: LeaseRecords | undefined;
  /** The nodes, clock and settings, from the first check on. */
  #set: NodeSet | undefined;
  /** Whether a round asked the nodes already (see {@link #roundTimeoutMs}). */
  #metBefore = false;
  /** The median of the nodes' clock offsets (see `clockOffsetMs`). */
  #clockOffsetMs: number | undefined;

  constructor(nodeCount: number, options: IdentityOptions = {}) {
    const { inspect = () => undefined, mustInspect = false, restartGraceMs } = options;
    this.#ids = Array.from({ length: nodeCount }, newIdentity);
    this.#inspect = inspect;
    this.#warn = options.warn ?? (() => undefined);
    this.#restartGraceMs = restartGraceMs;
    const strict = restartGraceMs !== undefined && restartGraceMs > 0;
    this.#trustedAtOnce = nodeCount === 1 && !mustInspect && !strict;
    this.#abstainsOnChange = restartGraceMs !== 0 && (nodeCount > 1 || strict);
    this.#records =
      nodeCount > 1 && restartGraceMs === undefined ? new LeaseRecords(nodeCount) : undefined;
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
    const id = this.#ids[index] as Identity;
    return !this.#records || !Array.isArray(id.runIds) || !this.#records.due(index, ttlMs);
  }

  /** {@link known}, but for the lease record that it may still have to get. */
  #votes(index: number): boolean {
    const id = this.#ids[index] as Identity;
    if ((id.change || id.duplicateOf !== undefined) && this.#abstains(id)) return false;
    if (id.arrival) return false; // first seen: the lease records tell whether it is young
    if (this.#trustedAtOnce) return true;
    if (id.unchecked || this.#refusal) return false;
    if (id.runIds === undefined) return false;
    const node = this.#set?.nodes[index];
    return id.runIds === null || node === undefined || node.isCluster || this.#current(id, node);
  }

  /**
   * How far the servers' wall clocks are ahead of this process's (ms; the median of the nodes
   * whose INFO said), so that a hold's label gives its start in the servers' time;
   * `undefined` before any said, or when none will (INFO denied, or servers before Redis
   * 6.2: the holder's clock is then all there is).
   */
  clockOffsetMs(): number | undefined {
    return this.#clockOffsetMs;
  }

  /** Takes node `index`'s clock offset, by its latest INFO (see `clockOffsetMs`). */
  #takeClockOffset(index: number, offsetMs: number): void {
    (this.#ids[index] as Identity).clockOffsetMs = offsetMs;
    const offsets: number[] = [];
    for (const id of this.#ids) if (id.clockOffsetMs !== undefined) offsets.push(id.clockOffsetMs);
    offsets.sort((a, b) => a - b);
    this.#clockOffsetMs = offsets[Math.floor(offsets.length / 2)];
  }

  /** Why node `index` could not be asked yet, when it is not {@link NodeIdentities.known}. */
  failure(index: number): Error | undefined {
    return this.#ids[index]?.failure;
  }

  /**
   * Why node `index` does not vote although it said which server it is (it abstains, or its
   * connection was re-established since), as the error of its vote; `undefined` otherwise.
   */
  abstention(index: number, ttlMs = this.#longestTtlMs): NotSentError | undefined {
    const id = this.#ids[index];
    const set = this.#set;
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
        !this.#current(id, node),
      failure: id.failure,
      arriving: id.arrival !== undefined,
      unchecked: id.unchecked,
      unrecorded: this.recorded(index, ttlMs)
        ? undefined
        : { ttlMs, failure: this.#records?.failure(index) },
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
    const name = this.#set?.nodes[index]?.name ?? `nodes[${index}]`;
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
    if (ttlMs > this.#longestTtlMs) this.#longestTtlMs = ttlMs;
    const set = this.#set;
    const records = this.#records;
    if (!records || !set) return undefined;
    // Whether the TTL was asked for before does not tell: its records may have failed.
    const now = set.clock.now();
    let due = false;
    for (let index = 0; index < this.#ids.length && !due; index++) {
      due =
        records.due(index, ttlMs) &&
        !records.refusedSince(index, now, IDENTITY_RECHECK_MS) &&
        this.#recordable(index) !== undefined;
    }
    return due ? records.record(set, this.#longestTtlMs, (i) => this.#recordable(i)) : undefined;
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
    if (ttlMs > this.#longestTtlMs) this.#longestTtlMs = ttlMs;
    return this.#check(context, ttlMs, true);
  }

  /**
   * {@link check} for a read that grants nothing (`Election.leader`, `Locker.inspect`,
   * `Locker.list`), with the read's per-node timeout: no lease is recorded for it, so that a
   * user who may only read writes nothing.
   */
  checkForRead(context: NodeSet, nodeTimeoutMs: number): Promise<void> | undefined {
    return this.#check(context, nodeTimeoutMs, false);
  }

  /**
   * `ms`: a lease (`isTtl`), whose per-node timeout the round takes, or that timeout; `again`:
   * a read's second check, after a round with a shorter timeout.
   */
  #check(context: NodeSet, ms: number, isTtl: boolean, again = false): Promise<void> | undefined {
    if (this.#refusal) return Promise.reject(this.#refusal);
    this.#set ??= context;
    // Converted only where a round is due or under way: on the hot path none is.
    let ownMs: number | undefined;
    if (!this.#checking) {
      if (!this.#due(context)) return undefined;
      this.#inBackground = !this.#mustWait(context);
      this.#checkingFirst = !this.#metBefore;
      ownMs = this.#roundTimeoutMs(isTtl ? nodeTimeoutFor(context, ms) : ms);
      this.#checkingMs = ownMs;
      this.#recordingTtlMs = undefined;
      this.#checking = this.#ask(context, ownMs).finally(() => {
        this.#checking = undefined;
      });
    } else if (isTtl && this.#recordingTtlMs !== undefined && ms > this.#recordingTtlMs) {
      // Joined a round already recording a shorter lease: once it is over, this one's.
      return this.#checking.then(() => this.#check(context, ms, isTtl));
    }
    const trusted = this.#trustedAtOnce && this.#ids[0]?.runIds !== undefined;
    if (trusted || (this.#inBackground && !this.#mustWait(context))) {
      // Votes count meanwhile: asking again only warns, or finds a refusal for next time.
      this.#checking.catch(() => undefined);
      return undefined;
    }
    if (ownMs === undefined && !isTtl && !again && ms > this.#checkingMs) {
      // A read joined a round with a shorter timeout (an acquisition's): the answers still on
      // their way get the read's own, and a node still due is then asked again with it.
      return this.#checking.then(() => this.#readAgain(context, ms));
    }
    if (ownMs === undefined && isTtl) {
      // Joined a round that may allow its nodes longer than this acquisition's own would
      // (one a read started, with the read's timeout): wait no longer than its own, the first
      // contact's grace included. A node still unanswered then does not vote in this attempt;
      // the next attempt joins again.
      ownMs = nodeTimeoutFor(context, ms);
      if (this.#checkingFirst) ownMs = Math.max(ownMs, CONNECT_GRACE_MS);
      if (ownMs < this.#checkingMs) {
        // A refusal found meanwhile (a server listed twice, one `inspect` refused) is its too.
        return settledWithin(this.#checking, ownMs).then(() => {
          if (this.#refusal) throw this.#refusal;
        });
      }
    }
    return this.#checking;
  }

  /** A read's check after a round with a shorter timeout than its own `ms` (see `#check`). */
  async #readAgain(context: NodeSet, ms: number): Promise<void> {
    const answering = this.#ids.flatMap((id) => (id.answering ? [id.answering] : []));
    if (answering.length > 0) await settledWithin(Promise.all(answering), ms);
    return this.#check(context, ms, false, true);
  }

  /** Whether `id` was read on `node`'s current connection. */
  #current(id: Identity, node: StallGuard): boolean {
    return id.generation === node.generation;
  }

  /**
   * How long `change` keeps a node out: `restartGraceMs`, or the longest lease on record (and,
   * after a change this locker saw, the longest it asked for itself).
   */
  #graceMs(change: IdentityChange): number {
    if (this.#restartGraceMs !== undefined) return this.#restartGraceMs;
    if (change.graceMs !== undefined) return change.graceMs;
    return Math.max(this.#longestTtlMs, this.#records?.fleetLongestMs ?? 0);
  }

  /** The grace of `change`, and where it comes from, for messages. */
  #graceName(change: IdentityChange): string {
    const graceMs = this.#graceMs(change);
    return this.#restartGraceMs === undefined
      ? `the ${graceMs} ms restart grace (the longest lease on record on the nodes)`
      : `the ${graceMs} ms restart grace (restartGraceMs)`;
  }

  /** When a node that changed votes again: every lease it could have granted is over. */
  #until(change: IdentityChange): number {
    const graceMs = this.#graceMs(change);
    return change.since + graceMs + driftMs(graceMs, this.#set?.settings.driftFactor ?? 0);
  }

  /** Whether `id` abstains now; forgets a change whose grace is over. */
  #abstains(id: Identity): boolean {
    if (id.duplicateOf !== undefined) return true;
    if (!id.change || !this.#set) return false;
    if (id.rereading || this.#set.clock.now() < this.#until(id.change)) return true;
    id.change = undefined;
    return false;
  }

  /** Whether some node must be asked (again) which server it is. Allocates nothing. */
  #due({ nodes, clock }: NodeSet): boolean {
    for (let index = 0; index < this.#ids.length; index++) {
      const node = nodes[index];
      if (node && this.#isDue(index, node, clock)) return true;
    }
    return false;
  }

  /**
   * Whether some node that is due must answer before its votes count: any but a Redis Cluster
   * that answered once, whose masters are asked again in the background.
   */
  #mustWait({ nodes, clock }: NodeSet): boolean {
    for (let index = 0; index < this.#ids.length; index++) {
      const node = nodes[index];
      const id = this.#ids[index] as Identity;
      if (!node) continue;
      if (this.#mustRecord(index)) return true;
      if (node.isCluster && id.runIds !== undefined) continue;
      if (this.#isDue(index, node, clock)) return true;
    }
    return false;
  }

  /**
   * Whether node `index` votes but for the lease record it must get first (a node whose
   * server refused it is asked again every {@link IDENTITY_RECHECK_MS}, not before every
   * acquisition), or is first seen and waits for the records to tell whether it is young.
   */
  #mustRecord(index: number): boolean {
    const records = this.#records;
    if (!records) return false;
    if (this.#ids[index]?.arrival) return true;
    if (!records.due(index, this.#longestTtlMs)) return false;
    const now = this.#set?.clock.now() ?? 0;
    if (records.refusedSince(index, now, IDENTITY_RECHECK_MS)) return false;
    return this.#recordable(index) !== undefined;
  }

  /** The server to name in node `index`'s lease record, when it may get one now. */
  #recordable(index: number): string | undefined {
    const id = this.#ids[index] as Identity;
    if (!Array.isArray(id.runIds) || !this.#votes(index)) return undefined;
    return serverName(id.runIds);
  }

  /** Whether node `index` must be asked which server it is, or get its lease record. */
  #isDue(index: number, node: StallGuard, clock: Clock): boolean {
    return this.#mustRecord(index) || this.#identityDue(index, node, clock);
  }

  /** Whether node `index` must be asked (again) which server it is. */
  #identityDue(index: number, node: StallGuard, clock: Clock): boolean {
    const id = this.#ids[index] as Identity;
    if (id.runIds === undefined) return true;
    if (id.runIds === null) return false;
    if (node.isCluster) {
      return !this.#current(id, node) || clock.now() - id.readAt >= CLUSTER_RECHECK_MS;
    }
    if (!this.#current(id, node)) return true;
    return !node.reportsReconnects && clock.now() - id.readAt >= IDENTITY_RECHECK_MS;
  }

  /**
   * The per-node timeout of a round that asks the nodes which server they are, and records
   * their leases. Meeting the nodes is not a vote: a locker's first round allows the
   * connection grace, as its first operation does for opening connections, so that a first
   * single attempt on a loaded machine does not find every node unknown. Later rounds
   * (reconnects, re-checks, a node first reached late) keep the per-node timeout: a node
   * that answers late is known from the next attempt on.
   */
  #roundTimeoutMs(timeoutMs: number): number {
    if (this.#metBefore) return timeoutMs;
    this.#metBefore = true;
    return Math.max(timeoutMs, CONNECT_GRACE_MS);
  }

  /** `timeoutMs`: the round's per-node timeout (see {@link #roundTimeoutMs}). */
  async #ask(context: NodeSet, timeoutMs: number): Promise<void> {
    const { clock } = context;
    const round: Round = { over: false, changes: [], timeoutMs };
    const asking = askEveryNode(
      context,
      timeoutMs,
      (node, _timeoutMs, index) => {
        const id = this.#ids[index] as Identity;
        // Not due: its lease record comes after the round.
        if (!this.#identityDue(index, node, clock)) return Promise.resolve();
        const answering = this.#askOne(context, node, index, round);
        id.answering = answering;
        const answered = () => {
          if (id.answering === answering) id.answering = undefined;
        };
        answering.then(answered, answered);
        return answering;
      },
      { judge: () => ({ vote: 'yes' }) },
    );
    await asking.settled;
    round.over = true;
    await this.#takeChanges(context, timeoutMs, round.changes);
    this.#findDuplicates(context);
    if (this.#refusal) throw this.#refusal;
    if (this.#records) await this.#settleRecords(context, this.#records, timeoutMs);
  }

  /**
   * Takes in the nodes that answered as another server: each abstains for the fleet's longest
   * lease, so every record is read again first (with lease records: a promise, over once they
   * are), then each gets its warning.
   */
  #takeChanges(
    context: NodeSet,
    timeoutMs: number,
    changes: Round['changes'],
  ): Promise<void> | undefined {
    if (changes.length === 0) return undefined;
    const take = () => {
      for (const { id } of changes) id.rereading = false;
      for (const { warn } of changes) warn();
    };
    const refreshing = this.#records?.refresh(context, timeoutMs);
    if (!refreshing) return void take();
    return refreshing.then(take);
  }

  /** Asks node `index` which server it is (and its lease record), in `round`. */
  async #askOne(context: NodeSet, node: StallGuard, index: number, round: Round): Promise<void> {
    const { clock } = context;
    const id = this.#ids[index] as Identity;
    const generation = node.generation;
    // Read before INFO is answered: that answer is the new connection's.
    const lastAnsweredAt = node.answeredAt(id.generation);
    try {
      // A readiness wait of 0: a connection that is not up is asked again next time.
      const askedAt = clock.now();
      const infoSent = node.send('INFO', [], 0);
      // Its lease record, read in the same round trip (a read: nothing a stranger keeps).
      const record = this.#records ? LeaseRecords.fetch(context, node) : undefined;
      record?.catch(() => undefined); // INFO's failure is the one to tell
      const info = String(await infoSent);
      const read = { askedAt, readAt: clock.now() };
      const offsetMs = serverClockOffsetMs(info, read, Date.now());
      if (offsetMs !== undefined) this.#takeClockOffset(index, offsetMs);
      const change = this.#read(index, info, generation, read, lastAnsweredAt);
      if (!round.over) {
        if (change) round.changes.push({ id, warn: change });
      } else {
        // An answer after its round: compared with the others now; a node that changed
        // abstains for the fleet's longest lease, read again first, as in a round.
        try {
          const changes = change ? [{ id, warn: change }] : [];
          this.#takeChanges(context, round.timeoutMs, changes)?.catch(() => undefined);
        } finally {
          this.#findDuplicates(context);
        }
      }
      if (record) this.#records?.take(index, await record);
    } catch (error) {
      id.failure = error instanceof Error ? error : undefined;
      // Only the server's own refusal (INFO renamed or denied) is final; a connection
      // error, or nothing sent, is asked again next time.
      if (isInfoRefused(error) && id.runIds === undefined) {
        id.runIds = null;
        this.#refusal ??= this.#inspect(index, undefined);
      }
    }
  }

  /**
   * After a round of INFO: a node first seen that did not keep its own lease record, and is
   * younger than the longest lease on record, abstains; then each node that votes records the
   * locker's longest TTL. The records are read again then, from every node: a node first
   * seen later than the others must be judged on the records as they are now. That covers
   * the node's leases when one of any majority it was part of answers (it does when N -
   * quorum + 1 other nodes answer); when fewer answer, more nodes are out than a majority
   * tolerates besides the restart, and the records read are all there is to go by (taking
   * this locker's own TTL instead would keep a fresh deployment with nodes out from locking).
   */
  async #settleRecords(context: NodeSet, records: LeaseRecords, timeoutMs: number): Promise<void> {
    const arriving = [...this.#ids.entries()].filter(([index, id]) => {
      if (!id.arrival) return false;
      if (Array.isArray(id.runIds) && !records.keptBy(index, serverName(id.runIds))) return true;
      id.arrival = undefined; // its server kept its own record: it kept its data
      return false;
    });
    if (arriving.length > 0) {
      await records.refresh(context, timeoutMs);
      const graceMs = records.fleetLongestMs;
      for (const [, id] of arriving) {
        const arrival = id.arrival;
        id.arrival = undefined;
        if (!arrival) continue;
        const young = youngOnArrival(arrival.servers, arrival.readAt, graceMs);
        id.change = young && { ...young, graceMs };
      }
    }
    // The longest lease's per-node timeout, as when recording it elsewhere, if that is longer.
    const longestMs = this.#longestTtlMs;
    this.#recordingTtlMs = longestMs;
    const recordMs = Math.max(timeoutMs, nodeTimeoutFor(context, longestMs));
    await records.record(context, longestMs, (i) => this.#recordable(i), recordMs);
  }

  /**
   * Takes in node `index`'s answer to INFO, sent on connection `generation` (`read`: when it
   * was asked and answered; see `takeInfo`). Returns the warning to give once the round is
   * over, when the node answers as another server.
   */
  #read(
    index: number,
    info: string,
    generation: number,
    read: InfoRead,
    lastAnsweredAt: number | undefined,
  ): (() => void) | undefined {
    const taken = takeInfo(this.#ids[index] as Identity, info, generation, read, lastAnsweredAt, {
      isCluster: this.#set?.nodes[index]?.isCluster === true,
      restartGraceMs: this.#restartGraceMs,
      leaseRecords: this.#records !== undefined,
      abstainsOnChange: this.#abstainsOnChange,
    });
    const changed = taken.changed;
    if (changed) this.#records?.forget(index);
    if (taken.inspect) this.#refusal ??= this.#inspect(index, info);
    if (!changed) return undefined;
    const { change, before, after } = changed;
    return () =>
      this.#warn(
        index,
        'NODE_IDENTITY_CHANGED',
        this.#changeWarning(change, read.readAt, before, after),
      );
  }

  #changeWarning(
    change: IdentityChange,
    now: number,
    before: readonly string[],
    after: readonly string[],
  ): string {
    const runIds = `run_id ${before.join(',')}, now ${after.join(',')}`;
    if (this.#abstainsOnChange) {
      const grace = this.#graceName(change);
      return `${abstentionReason(change, now, grace, this.#until(change))}; ${runIds}`;
    }
    return (
      `its run_id changed (${runIds}): it restarted or failed over, and may have lost the ` +
      'locks it held, which another client can then take while their holders still hold ' +
      'them. A single node goes on locking: give restartGraceMs to make it abstain that long'
    );
  }

  /** Compares the servers the nodes answered as (see `findDuplicates`). */
  #findDuplicates(context: NodeSet): void {
    const found = findDuplicates(this.#ids, (index) => context.nodes[index]?.name);
    this.#refusal ??= found.refusal;
    for (const { index, message } of found.warnings) this.#warn(index, 'NODE_DUPLICATE', message);
  }
}

/** One round of INFO: whether it is over, and the warnings it gives when it is. */
interface Round {
  over: boolean;
  /** The nodes that answer as another server, and their warnings. */
  readonly changes: { readonly id: Identity; readonly warn: () => void }[];
  /** Its per-node timeout. */
  readonly timeoutMs: number;
}

/**
 * `round`, or `undefined` once `ms` have passed if it is still going on then; rejects as
 * `round` does before that.
 */
function settledWithin(round: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    timer.unref?.();
    round.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
