import { type Clock, monotonicClock } from '../clock.js';
import { keyOf } from './cluster-routing.js';
import {
  isErrorReply,
  NotSentError,
  type RedisConnection,
  shareKnownScripts,
} from './connection.js';

/** Commands in flight to one server (their deadlines), and whether one outlived its own. */
interface Flight {
  readonly deadlines: Set<{ readonly at: number }>;
  stalled: boolean;
  /** When the last probe of a stalled server was sent (by `performance.now()`). */
  probedAt?: number;
}

/** Timers may fire up to a millisecond early (libuv keeps its clock in whole ms). */
const TIMER_SLACK_MS = 2;

/**
 * How often a stalled server is asked whether it moves again (see `#probe`), at most (ms). Its
 * answer ends the stall; without a probe, a command lost on a connection that stays open
 * (a proxy that dropped it) would stall the node until the connection failed.
 */
const PROBE_INTERVAL_MS = 250;

/**
 * Keeps commands from piling up behind a node that stopped answering (paused, black-holed):
 * once a command outlives its timeout, new commands to that node fail at once without being
 * sent, until the node answers anything again; a probe asks it, at most every 250 ms, while
 * commands are refused. For a connection to several servers (a
 * Redis Cluster, see {@link RedisConnection.shardOf}), each server is tracked on its own.
 *
 * Deletes of our own keys go through {@link StallGuard.forced} and are always sent: a `SET`
 * that reached a stalled node before the stall was noticed must be undone when it wakes up.
 *
 * It also tells when the node may have become another server ({@link StallGuard.generation})
 * and when it last answered, for the check of which server each node is.
 */
export class StallGuard implements RedisConnection {
  readonly name: string;
  /** The same node without the guard, for cleanup commands that must always be sent. */
  readonly forced: RedisConnection;
  readonly #inner: RedisConnection;
  readonly #flights = new Map<string, Flight>();
  readonly #clock: Clock;
  /** Commands that failed with the connection rather than with an error reply. */
  #connectionFailures = 0;
  /** The generation of the command answered last, and when (by `#clock`). */
  #answeredGeneration = -1;
  #answeredAt = 0;

  constructor(inner: RedisConnection, clock: Clock = monotonicClock) {
    this.#inner = inner;
    this.#clock = clock;
    this.name = inner.name;
    this.forced = {
      name: inner.name,
      send: (command, args, timeoutMs) =>
        this.#track(this.#shardOf(command, args), command, args, timeoutMs, true),
      close: () => inner.close(),
      shardOf: (command, args) => this.shardOf(command, args),
    };
    shareKnownScripts(this.forced, this);
  }

  /**
   * The node's own `openSubscriber`, when it has one: a subscription is not a command that
   * could pile up behind a stalled node, so it is not guarded.
   */
  get pubSub(): RedisConnection['openSubscriber'] {
    return this.#inner.openSubscriber?.bind(this.#inner);
  }

  /**
   * Changes whenever commands may reach another server than before: when the connection was
   * (re)established ({@link RedisConnection.generation}), and after a command failed with its
   * connection (a reset, a closed socket) rather than with an error reply.
   */
  get generation(): number {
    return (this.#inner.generation ?? 0) + this.#connectionFailures;
  }

  /**
   * Whether the connection reports each time it is (re)established; without that, a
   * reconnect that no command saw fail goes unnoticed.
   */
  get reportsReconnects(): boolean {
    return this.#inner.generation !== undefined;
  }

  /** Whether the node is several servers (a Redis Cluster, see {@link RedisConnection.shardOf}). */
  get isCluster(): boolean {
    return this.#inner.shardOf !== undefined;
  }

  /**
   * When a server last answered (by the guard's clock), if the last answer was to a command
   * sent at `generation`; `undefined` when a later connection has answered since.
   */
  answeredAt(generation: number): number | undefined {
    return this.#answeredGeneration === generation ? this.#answeredAt : undefined;
  }

  /**
   * Whether the node ever answered a command sent through this guard (a reply, or an error
   * reply): false while its server has never been reached.
   */
  get answeredOnce(): boolean {
    return this.#answeredGeneration !== -1;
  }

  /** Whether a server of the node has a command that outlived its timeout. */
  get stalled(): boolean {
    for (const flight of this.#flights.values()) if (flight.stalled) return true;
    return false;
  }

  /**
   * Called when a command sent through this guard outlived its timeout. Only a server with a
   * command unanswered past its own timeout counts as stalled (not another shard whose
   * command is merely on its way): that answer is what clears the mark.
   */
  markStalled(): void {
    const now = performance.now() + TIMER_SLACK_MS;
    for (const flight of this.#flights.values()) {
      for (const deadline of flight.deadlines) if (deadline.at <= now) flight.stalled = true;
    }
  }

  /** The masters of a Redis Cluster connection; `undefined` for a connection to one server. */
  clusterMasters(timeoutMs: number): Promise<readonly RedisConnection[]> | undefined {
    return this.#inner.masters?.(timeoutMs);
  }

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    const shard = this.#shardOf(command, args);
    const flight = this.#flights.get(shard);
    if (flight?.stalled) {
      this.#probe(shard, flight, command, args);
      const server = shard === '' ? this.name : `${this.name} (${shard})`;
      return Promise.reject(
        new NotSentError(`${server} has not answered an earlier command; nothing sent`),
      );
    }
    return this.#track(shard, command, args, timeoutMs);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  /** The server of a Cluster connection that `command` goes to; `undefined` for one server. */
  shardOf(command: string, args: readonly (string | number)[]): string | undefined {
    return this.#inner.shardOf?.(command, args);
  }

  #shardOf(command: string, args: readonly (string | number)[]): string {
    return this.shardOf(command, args) ?? '';
  }

  /**
   * Asks a stalled server whether it moves again, unless that was asked less than the probe
   * interval ago: a `PING`, or on a Redis Cluster, whose connection routes a `PING` to any of
   * its servers, an `EXISTS` of the refused command's key, which its slot routes to the
   * stalled server as far as the slot table knows (a `MOVED` is followed: the answer may
   * then come from the slot's new master, and a stall that was not over shows again at the
   * next command's timeout).
   */
  #probe(shard: string, flight: Flight, command: string, args: readonly (string | number)[]): void {
    const now = performance.now();
    if (now - (flight.probedAt ?? Number.NEGATIVE_INFINITY) < PROBE_INTERVAL_MS) return;
    const key = shard === '' ? undefined : keyOf(command, args);
    if (shard !== '' && key === undefined) return;
    flight.probedAt = now;
    const [probe, probeArgs] = key === undefined ? ['PING', []] : ['EXISTS', [key]];
    this.#track(shard, probe, probeArgs, PROBE_INTERVAL_MS, true).catch(() => undefined);
  }

  #track(
    shard: string,
    command: string,
    args: readonly (string | number)[],
    timeoutMs: number,
    always = false,
  ): Promise<unknown> {
    let flight = this.#flights.get(shard);
    if (!flight) {
      flight = { deadlines: new Set(), stalled: false };
      this.#flights.set(shard, flight);
    }
    const tracked = flight;
    const deadline = { at: performance.now() + timeoutMs };
    tracked.deadlines.add(deadline);
    const generation = this.generation;
    const inner = this.#inner;
    const sent =
      always && inner.sendAlways
        ? inner.sendAlways(command, args, timeoutMs)
        : inner.send(command, args, timeoutMs);
    return sent.then(
      (reply) => {
        this.#answered(tracked, deadline, generation);
        return reply;
      },
      (error: unknown) => {
        this.#answered(tracked, deadline, isErrorReply(error) ? generation : undefined);
        throw error;
      },
    );
  }

  /**
   * A command tracked in `flight` was answered: any answer, even an error, shows that the
   * server (or its connection) moves again. `generation`: the connection the server answered
   * on; `undefined` when the command failed with its connection rather than by a reply.
   */
  #answered(flight: Flight, deadline: { readonly at: number }, generation: number | undefined) {
    flight.deadlines.delete(deadline);
    flight.stalled = false;
    if (generation === undefined) this.#connectionFailures++;
    else this.#serverAnswered(generation);
  }

  #serverAnswered(generation: number): void {
    if (generation < this.#answeredGeneration) return; // a late answer on an older connection
    this.#answeredGeneration = generation;
    this.#answeredAt = this.#clock.now();
  }
}
