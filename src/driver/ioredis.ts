import { nextTick } from 'node:process';
import type { ConnectionOptions } from 'node:tls';
import type { RedisOptions } from 'ioredis';
import {
  ClusterNodeError,
  lastErrorText,
  NotSentError,
  onePerClient,
  type RedisConnection,
  readyWithin,
  type Subscriber,
} from './connection.js';
import { ioredisLibrary } from './libraries.js';
import { SchemeCheck, type SchemeTarget } from './tls-scheme.js';

/**
 * The subset of an ioredis client that the adapter uses: ioredis 5 and 6 and iovalkey (an
 * ioredis fork) fit it. Purely structural, so that a client of any of them (each with its
 * own `RedisOptions` and `Redis` classes) type-checks as a node.
 */
export interface IORedisLike {
  status: string;
  /** The socket of the current connection: a new one each time ioredis (re)connects. */
  readonly stream?: object | undefined;
  /** Commands written and not answered yet (ioredis's own queue; read for its length only). */
  readonly commandQueue?: { readonly length: number };
  options: {
    host?: string | undefined;
    port?: number | undefined;
    path?: string | null | undefined;
    db?: number | undefined;
    keyPrefix?: string | undefined;
  };
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  connect(): Promise<void>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  once(event: 'ready' | 'close' | 'end', listener: () => void): unknown;
  off(event: 'ready' | 'close' | 'end', listener: () => void): unknown;
  /** A new client with the same settings, `override` applied (options as ioredis takes them). */
  duplicate(override?: object): IORedisSubscriberLike;
}

/** An ioredis client (or cluster) in subscriber mode. */
export interface IORedisSubscriberLike extends IORedisLike {
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
}

/** A socket whose writes can be held back and then sent in one go. */
interface Corkable {
  cork(): void;
  uncork(): void;
}

/** True when `value` looks like an ioredis client. */
export function isIORedisLike(value: unknown): value is IORedisLike {
  const v = value as Partial<IORedisLike> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.call === 'function' &&
    typeof v.status === 'string' &&
    typeof v.options === 'object'
  );
}

/**
 * Options for the clients distlock opens from URLs: a command is never queued while the
 * connection is down, and never silently re-sent after a reconnect (a late `SET NX` would
 * take a lock that nobody holds any more).
 */
export const OWNED_CLIENT_OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  retryStrategy: (attempt) => Math.min(attempt * 50, 1_000),
  // On close, a socket to a node that is already gone never reports 'close'; ioredis then
  // waits this long (default 2 s, on a ref'ed timer) before destroying it.
  disconnectTimeout: 200,
};

/** ioredis errors that follow a failed connection rather than explain it. */
const CONSEQUENCE = /^(Stream isn't writeable|Connection is closed|Reached the max retries)/;

/**
 * The client's own methods for the commands every acquire and release sends. Only these:
 * a method applies ioredis's transformers for its command (`hgetall` makes an object of the
 * reply, `hset` takes one), which `call` with the upper-case name does not, and the adapter
 * must return replies as the server sent them.
 */
const METHODS: ReadonlyMap<string, string> = new Map([
  ['SET', 'set'],
  ['EVALSHA', 'evalsha'],
  ['EVAL', 'eval'],
]);

/**
 * Sends `command` through the client's own method for it (`client.set(...)`) where there is
 * one in {@link METHODS}, else through `call`. Both send the same bytes, but `call` takes the
 * name off its arguments and looks the command's flags up by a lower-case copy of it, several
 * times per command: on one node, about 5 µs of client CPU per acquire and release.
 */
function commandOf(
  client: IORedisLike,
  command: string,
  args: readonly (string | number)[],
): Promise<unknown> {
  // A Map, not an object: no command name can reach a property of Object.prototype.
  const name = METHODS.get(command);
  const method = name && (client as unknown as Record<string, unknown>)[name];
  if (typeof method !== 'function') return client.call(command, ...args);
  // The method takes the arguments as its own (a rest parameter): `args` is not changed.
  return (method as (...commandArgs: (string | number)[]) => Promise<unknown>).apply(
    client,
    args as (string | number)[],
  );
}

/**
 * The most commands one write carries while commands are batched (see `#batchWrites`). With
 * 64 acquisitions at once on one node, one write per tick left the server idle while the
 * client made the tick's commands and the client idle while the server answered them all;
 * leaving every 32 made about a quarter more cycles per second (bench/README.md).
 */
const WRITE_BATCH = 32;

/**
 * Commands in flight on a connection from which a command waits for the end of its tick to
 * leave (see `#batchWrites`). Not 1: one at a time on N nodes, a round decided by a majority
 * leaves the slower nodes' commands in flight when the next round starts, and each round's
 * one command per node would then wait for the end of the tick for nothing. Sent at once
 * instead, 5 nodes one at a time made 1.07 times the cycles (8 alternating pairs of 3 s).
 */
const BATCH_FROM_IN_FLIGHT = 2;

/** How long `close()` lets a node answer QUIT before it drops the connection. */
const CLOSE_TIMEOUT_MS = 500;

/** {@link RedisConnection} over an ioredis client. */
export class IORedisConnection implements RedisConnection {
  readonly name: string;
  readonly #client: IORedisLike;
  #readyOrEnd: Promise<boolean> | undefined;
  /** Why the connection failed last (cleared once it is ready): the real cause of NotSent. */
  #lastError: Error | undefined;
  readonly #clusterMember: boolean;
  /** Whether commands go through `call` with their name as given (see `routedByCluster`). */
  readonly #byCall: boolean;
  /** The socket seen last, and how many sockets and 'ready' events were seen (generation). */
  #stream: object | undefined;
  #reconnects = 0;
  /** The socket corked until the end of this tick, if any (see `#batchWrites`). */
  #corked: Corkable | undefined;
  /** Commands held back in the current batch (see `#batchWrites`). */
  #batched = 0;
  /** Whether a failing connection talks to a TLS port without TLS, or the reverse. */
  readonly #scheme: SchemeCheck;

  /**
   * `name`: how errors and events name the node; by default its host and port.
   * `clusterMember`: the client is one master of a Redis Cluster, for which MOVED is only
   * resharding, not a misconfiguration. `routedByCluster`: the client is a Cluster client,
   * whose commands always go through `call` with the upper-case name: ioredis then finds no
   * key in them and sends them to any master, whose MOVED the caller follows, rather than to
   * the master of a slot table that may be out of date (after a failover, a dead one). A
   * client with a `keyPrefix` keeps `call` too: iovalkey prefixes the keys of a command sent
   * by its method but not by `call` with the upper-case name, and every command must see
   * the same keys.
   */
  constructor(
    client: IORedisLike,
    name?: string,
    { clusterMember = false, routedByCluster = false } = {},
  ) {
    this.#client = client;
    this.#clusterMember = clusterMember;
    this.#byCall = routedByCluster || Boolean(client.options.keyPrefix);
    this.#scheme = new SchemeCheck(schemeTarget(client.options));
    client.on('error', (error: Error) => {
      // The socket that failed (ioredis replaces it only when it connects again) may fail twice.
      keepErrorListener(client.stream);
      // Keep the cause, not its consequences ("Stream isn't writeable...", "Connection is
      // closed."), which ioredis reports for commands after the connection failed.
      if (CONSEQUENCE.test(error.message)) return;
      this.#lastError = withTlsHint(withoutCommand(rootCause(error)), client.options);
    });
    client.on('ready', () => {
      this.#lastError = undefined;
      this.#scheme.clear();
      this.#reconnects++; // for a client without `stream`; ioredis emits it a tick late
    });
    this.name = name ?? nodeName(client.options);
  }

  /**
   * Changes with each new socket (ioredis replaces its `stream` before it writes anything on
   * a new connection) and each 'ready' event.
   */
  get generation(): number {
    const stream = this.#client.stream;
    if (stream !== this.#stream) {
      this.#stream = stream;
      this.#reconnects++;
    }
    return this.#reconnects;
  }

  /** The adapter of a client the caller owns: made once per client, then reused. */
  static readonly of = onePerClient(
    (client: IORedisLike, name?: string) => new IORedisConnection(client, name),
  );

  /**
   * Opens a client for `url` with {@link OWNED_CLIENT_OPTIONS} (and `tls`, for `rediss://`).
   * Throws `MissingLibraryError` when ioredis is not installed.
   */
  static fromUrl(url: string, tls?: ConnectionOptions): IORedisConnection {
    const { Redis } = ioredisLibrary(
      'to connect to redis:// URLs',
      'or pass clients of node-redis, iovalkey or valkey-glide as the nodes',
    );
    // Connection errors reach callers as failed votes, with the last one as their cause (the
    // adapter listens for them, so ioredis does not also print each one).
    const options = tls ? { ...OWNED_CLIENT_OPTIONS, tls } : OWNED_CLIENT_OPTIONS;
    return new IORedisConnection(new Redis(url, options));
  }

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    let reply: Promise<unknown>;
    if (this.#client.status === 'ready') {
      this.#batchWrites();
      reply = this.#command(command, args);
    } else reply = this.#ready(timeoutMs).then(() => this.#command(command, args));
    return this.#clusterMember ? reply : reply.catch(this.#movedMeansCluster);
  }

  #command(command: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.#byCall
      ? this.#client.call(command, ...args)
      : commandOf(this.#client, command, args);
  }

  /**
   * Lets the commands sent until the end of this tick leave in few writes: the socket is corked
   * now and uncorked once the current tick's callbacks and promise reactions have run (many
   * acquisitions, woken by replies that came in one read, send their next commands then).
   * Only while {@link BATCH_FROM_IN_FLIGHT} commands or more are in flight on the connection:
   * a command sent when fewer are (one lock at a time) leaves at once, with no cork and no
   * callback for the end of the tick, and the next ones in the same tick start the batch.
   * Nothing waits for a later event-loop turn.
   * Every {@link WRITE_BATCH} commands the batch leaves early: the server starts on them while
   * this process makes the rest, rather than both taking turns to wait for the other.
   */
  #batchWrites(): void {
    const corked = this.#corked;
    if (corked && this.#batched === WRITE_BATCH) {
      corked.uncork();
      corked.cork();
      this.#batched = 0;
    } else if (!corked) {
      const inFlight = this.#client.commandQueue?.length ?? BATCH_FROM_IN_FLIGHT;
      if (inFlight < BATCH_FROM_IN_FLIGHT) return;
      const stream = this.#client.stream as Partial<Corkable> | undefined;
      if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return;
      const socket = stream as Corkable;
      socket.cork();
      this.#corked = socket;
      this.#batched = 0;
      nextTick(() => {
        this.#corked = undefined;
        socket.uncork();
      });
    }
    this.#batched++; // the command sent next
  }

  /**
   * Sends `ASKING` and then the command back to back on this connection, so that nothing
   * comes between them: how a Cluster client follows an ASK redirection (the master importing
   * a slot takes the one command that follows `ASKING`). Resolves with the command's reply.
   */
  sendAsking(
    command: string,
    args: readonly (string | number)[],
    timeoutMs: number,
  ): Promise<unknown> {
    const both = () => {
      this.#client.call('ASKING').catch(() => undefined); // a failure shows in the command's reply
      return this.#client.call(command, ...args);
    };
    return this.#client.status === 'ready' ? both() : this.#ready(timeoutMs).then(both);
  }

  /** A single-node connection that gets MOVED was given a Cluster node: say what to do. */
  readonly #movedMeansCluster = (error: unknown): never => {
    if (!(error instanceof Error) || !error.message.startsWith('MOVED ')) throw error;
    throw new ClusterNodeError(
      `${this.name} is a Redis Cluster node (it answered ${error.message}): pass a Cluster ` +
        'client (new Cluster([...]) from ioredis), not the URL or client of one node',
    ); // no cause: ioredis attaches the command, whose arguments hold the lock token
  };

  connect(timeoutMs: number): Promise<void> {
    if (this.#client.status === 'ready') return Promise.resolve();
    // Not connecting in time is reported by the requests that follow, node by node.
    return this.#ready(timeoutMs).catch(() => undefined);
  }

  /**
   * A second connection in subscriber mode. The caller resubscribes on `onReady`, so ioredis's
   * own resubscription (which forgets channels whose subscribe failed) is off.
   */
  openSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    const subscriber = this.#client.duplicate({ enableOfflineQueue: true, autoResubscribe: false });
    return IORedisConnection.subscriberOver(subscriber, onMessage, onReady);
  }

  /** A {@link Subscriber} over a client (or cluster) of its own, closed with it. */
  static subscriberOver(
    subscriber: IORedisSubscriberLike,
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    subscriber.on('error', () => {}); // a lost subscriber only means waiters fall back to polling
    subscriber.on('message', (channel: string, message: string) => onMessage(channel, message));
    if (onReady) subscriber.on('ready', onReady);
    const owned = new IORedisConnection(subscriber, 'subscriber');
    return {
      subscribe: (channel) => subscriber.subscribe(channel),
      unsubscribe: (channel) => subscriber.unsubscribe(channel),
      close: () => owned.close(),
    };
  }

  /** Says QUIT (answered after pending replies), but never waits on a stuck node for long. */
  async close(): Promise<void> {
    const client = this.#client;
    if (client.status === 'end') return;
    if (client.status !== 'ready') {
      client.disconnect();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
    });
    await Promise.race([client.quit().catch(() => undefined), stuck]);
    clearTimeout(timer);
    client.disconnect();
  }

  /**
   * Waits for a connection that is still being opened; fails at once when it is known to be
   * down (reconnecting, closed), so that a dead node costs nothing.
   */
  #ready(timeoutMs: number): Promise<void> {
    const client = this.#client;
    const notSent = () => {
      const cause = this.#scheme.found ?? this.#lastError;
      const why = lastErrorText(cause);
      return new NotSentError(`not connected to ${this.name} (${client.status})${why}`, { cause });
    };
    if (this.#scheme.found) return Promise.reject(notSent());
    // A failed connect surfaces through the events below (or the timeout), not this promise.
    if (client.status === 'wait') client.connect().catch(() => undefined);
    else if (client.status !== 'connecting' && client.status !== 'connect') {
      // Asked in the background (at most once until the connection is ready again): a
      // connection between attempts costs nothing.
      this.#scheme.afterFailure(this.#lastError);
      return Promise.reject(notSent());
    }
    this.#readyOrEnd ??= new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (ready: boolean) => {
        if (settled) return;
        settled = true;
        attempt.stop();
        client.off('ready', onReady);
        client.off('close', onClose);
        client.off('end', onClose);
        this.#readyOrEnd = undefined;
        resolve(ready);
      };
      const onReady = () => settle(true);
      // 'close' during an attempt means it failed (refused, reset); ioredis retries later.
      // Whether the server speaks the other scheme is asked first, so that the failure says.
      const attempt = this.#scheme.watchAttempt(
        () => this.#lastError,
        () => settle(false),
      );
      const onClose = attempt.failed;
      client.once('ready', onReady);
      client.once('close', onClose);
      client.once('end', onClose);
    });
    // Every waiter shares one pair of listeners; each bounds its own wait.
    return readyWithin(this.#readyOrEnd, timeoutMs).then((ready) => {
      if (!ready) throw notSent();
    });
  }
}

/** What a client in Sentinel mode adds to its options. */
interface SentinelOptions {
  readonly name?: string;
  readonly sentinels?: readonly { host?: string; port?: number }[] | null;
}

/** Whether `client` finds its master through Redis Sentinel. */
export function usesSentinel(client: IORedisLike): boolean {
  const { sentinels } = client.options as SentinelOptions;
  return Array.isArray(sentinels) && sentinels.length > 0;
}

/** Sockets that {@link keepErrorListener} already listens on. */
const listenedTo = new WeakSet<object>();

/**
 * Keeps an 'error' listener on an ioredis socket for as long as it lives. ioredis listens
 * for a socket's first error only (`once`), yet a TLS socket whose handshake is done can
 * emit two: Node emits an OpenSSL failure (a server's alert, a record that does not
 * decrypt) directly, and the reset that follows through `destroy`, which emits again. With
 * no listener left, that second error would be an uncaught exception and end the process.
 * The first one reaches ioredis, and so the adapter.
 */
function keepErrorListener(stream: object | undefined): void {
  const socket = stream as { on?: (event: 'error', listener: () => void) => unknown } | undefined;
  if (typeof socket?.on !== 'function' || listenedTo.has(socket)) return;
  listenedTo.add(socket);
  socket.on('error', () => {});
}

/**
 * `host:port` (or the socket path), with `/db` when not 0; for a client in Sentinel mode,
 * `sentinel <master name> (<sentinels>)`, since its host changes with each failover.
 */
function nodeName(options: IORedisLike['options']): string {
  const { name, sentinels } = options as SentinelOptions;
  if (sentinels && sentinels.length > 0) {
    const where = sentinels.map((s) => `${s.host ?? 'localhost'}:${s.port ?? 26379}`).sort();
    return `sentinel ${name ?? 'mymaster'} (${where.join(',')})`;
  }
  const { host, port, path, db } = options;
  const where = path ? path : `${host ?? 'localhost'}:${port ?? 6379}`;
  return db ? `${where}/${db}` : where;
}

/** Where a client connects, for {@link SchemeCheck}: none for a Unix socket or Sentinel. */
function schemeTarget(options: IORedisLike['options']): SchemeTarget | undefined {
  const { host, port, path, tls, sentinels } = options as IORedisLike['options'] &
    SentinelOptions & { tls?: boolean | { servername?: string } };
  if (path || (Array.isArray(sentinels) && sentinels.length > 0)) return undefined;
  const servername = typeof tls === 'object' ? tls.servername : undefined;
  return { host: host ?? 'localhost', port: port ?? 6379, tls: Boolean(tls), servername };
}

/**
 * The error behind a cluster's "Failed to refresh slots cache.": the last node's own
 * (WRONGPASS, a TLS certificate...), which says what to fix.
 */
function rootCause(error: Error): Error {
  const { lastNodeError } = error as { lastNodeError?: unknown };
  return lastNodeError instanceof Error ? lastNodeError : error;
}

/**
 * `error`, with a hint when a TLS connection without a client certificate was reset: a
 * server that requires one (mTLS) sends its "certificate required" alert and closes, and a
 * client that wrote meanwhile may see only the reset, the alert lost with it.
 */
function withTlsHint(error: Error, options: IORedisLike['options']): Error {
  const { tls } = options as { tls?: { cert?: unknown } };
  const reset = (error as NodeJS.ErrnoException).code === 'ECONNRESET';
  if (!reset || !tls || tls.cert !== undefined) return error;
  const hinted = new Error(
    `${error.message} (if the server requires a client certificate, give tls.cert and tls.key)`,
    { cause: error },
  );
  hinted.name = error.name;
  return hinted;
}

/**
 * A client error without the command ioredis attaches to reply errors: its arguments may
 * hold a password (a failed AUTH) or a lock token, and this error becomes a cause that
 * loggers print.
 */
function withoutCommand(error: Error): Error {
  if (!('command' in error)) return error;
  const copy = new Error(error.message);
  copy.name = error.name;
  return copy;
}
