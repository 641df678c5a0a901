import { isErrorReply } from '../driver/connection.js';
import type { StallGuard } from '../driver/stall-guard.js';
import { leaseRecordKey } from '../keys.js';
import { type LeaseRecord, parseLeaseRecord, recordLeaseScript } from '../lua/lease-record.js';
import { askEveryNode, type NodeSet, nodeTimeoutFor } from './every-node.js';

/**
 * Each node's record of the longest lease it may have granted, kept for the day another node
 * restarts empty (DESIGN invariant 12): a lease that counted was granted by a majority, so by
 * at least one node besides the one that forgot it, and that node's record says how long the
 * forgetful one must abstain, whichever locker or process asks, whatever TTL it uses itself.
 *
 * - A locker records its longest TTL on a node (`<prefix>longest-lease`, `<ttlMs> <server>`)
 *   before that node may grant it such a lease, once per node and server, and again only when
 *   it asks for a longer one: no cost per operation.
 * - The record names the server that holds it. A server that has no record of its own, or one
 *   another server wrote (it restarted since, with its data or without), and that may have
 *   been up for less than the longest lease on record anywhere, abstains until it surely has
 *   been up that long: a fresh process (the CLI) tells a restart by the server's uptime and
 *   this record.
 * - Nothing is recorded on a node that abstains, so the next fresh process sees it too.
 *
 * Only on two nodes or more, and only when `restartGraceMs` is not given (which fixes the
 * grace instead).
 */
export class LeaseRecords {
  /** The longest lease recorded on each node's current server by this locker; 0: none. */
  readonly #recordedMs: number[];
  /** Each node's record as last read; `undefined` when it has none. */
  readonly #read: (LeaseRecord | undefined)[];
  /** Why each node's last record could not be written (READONLY, OOM, NOPERM...), and when. */
  readonly #failures: ({ error: Error; at: number } | undefined)[];
  #fleetLongestMs = 0;

  constructor(nodeCount: number) {
    this.#recordedMs = Array.from({ length: nodeCount }, () => 0);
    this.#read = Array.from({ length: nodeCount }, () => undefined);
    this.#failures = Array.from({ length: nodeCount }, () => undefined);
  }

  /** Why node `index` could not record its lease last time, if it could not. */
  failure(index: number): Error | undefined {
    return this.#failures[index]?.error;
  }

  /**
   * Whether node `index`'s server itself refused its record less than `intervalMs` before
   * `now` (READONLY, OOM, NOPERM): it is asked again only that often, not before every
   * acquisition, and does not vote meanwhile.
   */
  refusedSince(index: number, now: number, intervalMs: number): boolean {
    const failure = this.#failures[index];
    return failure !== undefined && isErrorReply(failure.error) && now - failure.at < intervalMs;
  }

  /** The longest lease on record on any node read so far: the fleet's restart grace. */
  get fleetLongestMs(): number {
    return this.#fleetLongestMs;
  }

  /** The key of the record. */
  static key(context: NodeSet): string {
    return leaseRecordKey(context.settings.prefix);
  }

  /** Reads node `index`'s record, with its identity: a readiness wait of 0, like INFO. */
  static fetch(context: NodeSet, node: StallGuard): Promise<unknown> {
    return node.send('GET', [LeaseRecords.key(context)], 0);
  }

  /** Takes in node `index`'s record (GET's reply). */
  take(index: number, reply: unknown): void {
    const record = parseLeaseRecord(reply);
    this.#read[index] = record;
    if (record && record.ttlMs > this.#fleetLongestMs) this.#fleetLongestMs = record.ttlMs;
  }

  /** Whether node `index`'s own record was written while `server` answered on it. */
  keptBy(index: number, server: string): boolean {
    return this.#read[index]?.server === server;
  }

  /** Node `index` answers as another server: it may have lost its record. */
  forget(index: number): void {
    this.#recordedMs[index] = 0;
    this.#read[index] = undefined;
    this.#failures[index] = undefined;
  }

  /** Whether node `index` must record `ttlMs` before it grants such a lease. */
  due(index: number, ttlMs: number): boolean {
    return (this.#recordedMs[index] ?? 0) < ttlMs;
  }

  /**
   * Records `ttlMs` on each node that `serverOf` names a server for (it votes), and whose
   * record this locker has not raised that far yet; resolves when they answered, each within
   * `timeoutMs`, by default the per-node timeout (a node that did not votes once its write is
   * answered: a node that is paused costs that timeout once, then is known stalled and is not
   * waited for again).
   */
  async record(
    context: NodeSet,
    ttlMs: number,
    serverOf: (index: number) => string | undefined,
    timeoutMs = nodeTimeoutFor(context, ttlMs),
  ): Promise<void> {
    const key = LeaseRecords.key(context);
    const asking = askEveryNode(context, timeoutMs, (node, timeoutMs, i) => {
      if (!this.due(i, ttlMs)) return Promise.resolve(1);
      const server = serverOf(i);
      if (server === undefined) return Promise.resolve(0);
      return recordLeaseScript.run(node, { key, ttlMs, server }, timeoutMs).then(
        (longest) => {
          this.#recordedMs[i] = Math.max(this.#recordedMs[i] ?? 0, ttlMs);
          this.#failures[i] = undefined;
          if (longest > this.#fleetLongestMs) this.#fleetLongestMs = longest;
          return 1;
        },
        (error: unknown) => {
          const failure = error instanceof Error ? error : new Error(String(error));
          this.#failures[i] = { error: failure, at: context.clock.now() };
          throw error;
        },
      );
    });
    await asking.settled;
  }

  /**
   * Reads every node's record again (a node changed, or one is first seen: the grace must be
   * the fleet's longest lease now, not as this locker read it before); each within
   * `timeoutMs`.
   */
  async refresh(context: NodeSet, timeoutMs: number): Promise<void> {
    const asking = askEveryNode(context, timeoutMs, (node, _t, index) =>
      LeaseRecords.fetch(context, node).then((reply) => {
        this.take(index, reply);
        return 1;
      }),
    );
    await asking.settled;
  }
}

/** The server(s) a record names: run_ids in order, whatever order a client lists them in. */
export function serverName(runIds: readonly string[]): string {
  return [...runIds].sort().join(',');
}
