/**
 * The rounds in which a locker asks its nodes which server each is (`INFO`) and records its
 * leases on them (see `NodeIdentities`, whose state they fill in).
 */
import { CONNECT_GRACE_MS } from '../driver/connection.js';
import { askEveryNode, type NodeSet, nodeTimeoutFor } from './every-node.js';
import { askOne, compareServers, type Round, takeChanges } from './identity-answers.js';
import type { IdentityBook } from './identity-book.js';
import { youngOnArrival } from './identity-change.js';
import { anyDue, IDENTITY_RECHECK_MS, identityDue, mustWait, recordable } from './identity-due.js';
import type { Identity } from './identity-state.js';
import { type LeaseRecords, serverName } from './lease-records.js';

/**
 * Asks the nodes which server each is, before an acquisition attempt or a read while some
 * node is due, one round at a time (a caller joins the round under way), and records the
 * locker's longest lease on them (see {@link LeaseRecords}).
 */
export class IdentityRounds {
  readonly #book: IdentityBook;
  #checking: Promise<void> | undefined;
  /** The per-node timeout of {@link #checking}. */
  #checkingMs = 0;
  /** Whether {@link #checking} is the locker's first round (see {@link #roundTimeoutMs}). */
  #checkingFirst = false;
  /** Whether {@link #checking} asks only Cluster nodes that answered before: no vote waits. */
  #inBackground = false;
  /** The lease {@link #checking} records, once it has read which (see {@link #settleRecords}). */
  #recordingTtlMs: number | undefined;
  /** Whether a round asked the nodes already (see {@link #roundTimeoutMs}). */
  #metBefore = false;

  constructor(book: IdentityBook) {
    this.#book = book;
  }

  /** `NodeIdentities.noteTtl`: notes a lease, and records it on the nodes when it must. */
  noteTtl(ttlMs: number): Promise<void> | undefined {
    if (ttlMs > this.#book.longestTtlMs) this.#book.longestTtlMs = ttlMs;
    const set = this.#book.set;
    const records = this.#book.records;
    if (!records || !set) return undefined;
    // Whether the TTL was asked for before does not tell: its records may have failed.
    const now = set.clock.now();
    let due = false;
    for (let index = 0; index < this.#book.ids.length && !due; index++) {
      due =
        records.due(index, ttlMs) &&
        !records.refusedSince(index, now, IDENTITY_RECHECK_MS) &&
        recordable(this.#book, index) !== undefined;
    }
    return due
      ? records.record(set, this.#book.longestTtlMs, (i) => recordable(this.#book, i))
      : undefined;
  }

  /** `NodeIdentities.check`: asks the nodes due before an acquisition of a lease of `ttlMs`. */
  check(context: NodeSet, ttlMs: number): Promise<void> | undefined {
    if (ttlMs > this.#book.longestTtlMs) this.#book.longestTtlMs = ttlMs;
    return this.#check(context, ttlMs, true);
  }

  /** `NodeIdentities.checkForRead`: {@link check} for a read, with its per-node timeout. */
  checkForRead(context: NodeSet, nodeTimeoutMs: number): Promise<void> | undefined {
    return this.#check(context, nodeTimeoutMs, false);
  }

  /**
   * `ms`: a lease (`isTtl`), whose per-node timeout the round takes, or that timeout; `again`:
   * a read's second check, after a round with a shorter timeout.
   */
  #check(context: NodeSet, ms: number, isTtl: boolean, again = false): Promise<void> | undefined {
    if (this.#book.refusal) return Promise.reject(this.#book.refusal);
    this.#book.set ??= context;
    // Converted only where a round is due or under way: on the hot path none is.
    let ownMs: number | undefined;
    if (!this.#checking) {
      if (!anyDue(this.#book, context)) return undefined;
      this.#inBackground = !mustWait(this.#book, context);
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
    const trusted = this.#book.rules.trustedAtOnce && this.#book.ids[0]?.runIds !== undefined;
    if (trusted || (this.#inBackground && !mustWait(this.#book, context))) {
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
          if (this.#book.refusal) throw this.#book.refusal;
        });
      }
    }
    return this.#checking;
  }

  /** A read's check after a round with a shorter timeout than its own `ms` (see `#check`). */
  async #readAgain(context: NodeSet, ms: number): Promise<void> {
    const answering = this.#book.ids.flatMap((id) => (id.answering ? [id.answering] : []));
    if (answering.length > 0) await settledWithin(Promise.all(answering), ms);
    return this.#check(context, ms, false, true);
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
        const id = this.#book.ids[index] as Identity;
        // Not due: its lease record comes after the round.
        if (!identityDue(this.#book, index, node, clock)) return Promise.resolve();
        const answering = askOne(this.#book, context, node, index, round);
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
    await takeChanges(this.#book, context, timeoutMs, round.changes);
    compareServers(this.#book, context);
    if (this.#book.refusal) throw this.#book.refusal;
    if (this.#book.records) await this.#settleRecords(context, this.#book.records, timeoutMs);
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
    const arriving = [...this.#book.ids.entries()].filter(([index, id]) => {
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
    const longestMs = this.#book.longestTtlMs;
    this.#recordingTtlMs = longestMs;
    const recordMs = Math.max(timeoutMs, nodeTimeoutFor(context, longestMs));
    await records.record(context, longestMs, (i) => recordable(this.#book, i), recordMs);
  }
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
