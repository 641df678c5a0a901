import {
  ClientNotOpenedError,
  ClusterNodeError,
  lastErrorText,
  NotSentError,
  onePerClient,
  type RedisConnection,
  readyWithin,
  type Subscriber,
} from './connection.js';
import { SchemeCheck, type SchemeTarget } from './tls-scheme.js';

/** What the adapter passes with each command (node-redis's `CommandOptions`). */
interface NodeRedisCommandOptions {
  /** Drops the command while it still waits in the client's queue, unwritten. */
  abortSignal?: AbortSignal;
  /** How replies are decoded, by RESP type byte. */
  typeMapping?: Readonly<Record<number, unknown>>;
}

/**
 * The subset of a node-redis client (the `redis` package, v5 and v6: what `createClient()`
 * returns) that the adapter uses. Structural: distlock does not depend on node-redis.
 */
export interface NodeRedisLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly isPubSubActive: boolean;
  /** The client's options; the adapter reads `socket.host`, `socket.port`, `socket.path`, `database`. */
  readonly options?: object | undefined;
  sendCommand(args: readonly string[], options?: NodeRedisCommandOptions): Promise<unknown>;
  duplicate(): NodeRedisSubscriberLike;
  close(): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready' | 'connect' | 'reconnecting' | 'end', listener: () => void): unknown;
  off(event: 'ready' | 'error' | 'end', listener: () => void): unknown;
}

/** A node-redis client used for pub/sub. */
interface NodeRedisSubscriberLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  subscribe(
    channel: string,
    listener: (message: string, channel: string) => unknown,
  ): Promise<unknown>;
  unsubscribe(
    channel: string,
    listener: (message: string, channel: string) => unknown,
  ): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'ready' | 'reconnecting' | 'end', listener: () => void): unknown;
  off(event: 'ready' | 'error' | 'end', listener: (error?: Error) => void): unknown;
}

/** True when `value` looks like a node-redis client (not a cluster, pool or sentinel). */
export function isNodeRedisLike(value: unknown): value is NodeRedisLike {
  const v = value as Partial<NodeRedisLike> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.sendCommand === 'function' &&
    typeof v.duplicate === 'function' &&
    typeof v.isReady === 'boolean' &&
    typeof v.isPubSubActive === 'boolean'
  );
}

/**
 * Replies in their RESP2 shapes whatever protocol the client speaks (node-redis 6 defaults to
 * RESP3) and whatever mapping it was given: maps as flat `[key, value, ...]` arrays, doubles
 * and big numbers as strings, every other string as a string (keys are RESP type bytes).
 */
export const RESP2_SHAPES: Readonly<Record<number, unknown>> = {
  37: Array, // % map
  44: String, // , double
  40: String, // ( big number
};

/** How long `close()` lets the node answer before the connection is dropped. */
const CLOSE_TIMEOUT_MS = 500;

/**
 * {@link RedisConnection} over a node-redis v5 or v6 client, which the caller connected
 * (`await createClient({ url }).connect()`); distlock never opens or closes it.
 *
 * A command is handed to node-redis only while the client is ready, and withdrawn if the
 * connection fails before node-redis wrote it (node-redis would write it after reconnecting):
 * it then rejects with a {@link NotSentError}. Commands already written when the connection
 * fails are rejected by node-redis with the connection error and never re-sent.
 */
export class NodeRedisConnection implements RedisConnection {
  readonly name: string;
  readonly #client: NodeRedisLike;
  /** Why the connection failed last (cleared once it is ready): the cause of NotSent. */
  #lastError: Error | undefined;
  /** Whether the last connection attempt failed and the next has not begun yet. */
  #betweenAttempts = false;
  #readyOrFailed: Promise<boolean> | undefined;
  /** Commands handed to node-redis that it may not have written yet. */
  readonly #unwritten = new Set<AbortController>();
  /** How many times the connection became ready since the adapter was made. */
  #readies = 0;
  /** Whether the client was ever open: connected by the caller, before or after the adapter. */
  #everOpened: boolean;
  /** Whether a failing connection talks to a TLS port without TLS, or the reverse. */
  readonly #scheme: SchemeCheck;

  /** `name`: how errors and events name the node; by default its host and port. */
  constructor(client: NodeRedisLike, name?: string) {
    this.#client = client;
    this.#everOpened = client.isOpen;
    this.#scheme = new SchemeCheck(schemeTarget(client.options));
    // node-redis throws an 'error' nobody listens for; connection errors reach callers as
    // failed votes, with the last one as their cause.
    client.on('error', (error: Error) => {
      if (client.isReady) return; // not about the connection (a failed ping, say)
      this.#lastError = error;
      this.#betweenAttempts = true;
      for (const command of this.#unwritten) command.abort();
    });
    const attempting = () => {
      this.#betweenAttempts = false;
    };
    client.on('reconnecting', attempting);
    client.on('connect', () => {
      this.#everOpened = true;
      attempting();
    });
    client.on('ready', () => {
      this.#lastError = undefined;
      this.#scheme.clear();
      this.#betweenAttempts = false;
      this.#readies++;
    });
    this.name = name ?? nodeName(client.options);
  }

  /**
   * Changes each time the connection becomes ready: node-redis says so (and sets `isReady`)
   * before it writes any command on the new connection.
   */
  get generation(): number {
    return this.#readies;
  }

  /** The adapter of a client the caller owns: made once per client, then reused. */
  static readonly of = onePerClient(
    (client: NodeRedisLike, name?: string) => new NodeRedisConnection(client, name),
  );

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    const argv = [command, ...args.map(String)];
    const reply = this.#client.isReady
      ? this.#write(argv)
      : this.#ready(timeoutMs).then(() => this.#write(argv));
    return reply.catch(this.#movedMeansCluster);
  }

  connect(timeoutMs: number): Promise<void> {
    if (this.#client.isReady) return Promise.resolve();
    return this.#ready(timeoutMs).catch(() => undefined);
  }

  /**
   * A second client (`duplicate()`) for pub/sub. node-redis subscribes it again after a
   * reconnect by itself; `onReady` follows each (re)connection all the same. A SUBSCRIBE is
   * handed to node-redis only once that client is ready: node-redis 5 (RESP2) loses track of
   * one that waited in its queue through a failed connection attempt, and then drops every
   * message on its channel.
   */
  openSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
    onLost?: () => void,
  ): Subscriber {
    const subscriber = this.#client.duplicate();
    subscriber.on('error', () => {}); // a lost subscriber only means waiters fall back to polling
    if (onReady) subscriber.on('ready', onReady);
    // node-redis subscribes again before 'ready': its 'reconnecting' comes first.
    if (onLost) subscriber.on('reconnecting', onLost);
    const listener = (message: string, channel: string) => onMessage(channel, message);
    // It retries by itself until closed; a failed attempt surfaces as an 'error' event.
    subscriber.connect().catch(() => undefined);
    return {
      subscribe: (channel) =>
        subscriberReady(subscriber).then(() => subscriber.subscribe(channel, listener)),
      unsubscribe: (channel) => subscriber.unsubscribe(channel, listener),
      close: async () => {
        if (subscriber.isOpen) subscriber.destroy();
      },
    };
  }

  /** Lets the node answer pending commands, but never waits on a stuck node for long. */
  async close(): Promise<void> {
    const client = this.#client;
    if (!client.isOpen) return;
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
      timer.unref();
    });
    await Promise.race([client.close().catch(() => undefined), stuck]);
    clearTimeout(timer);
    if (client.isOpen) client.destroy();
  }

  #write(argv: string[]): Promise<unknown> {
    const unwritten = new AbortController();
    this.#unwritten.add(unwritten);
    const options = { abortSignal: unwritten.signal, typeMapping: RESP2_SHAPES };
    return this.#client.sendCommand(argv, options).then(
      (reply) => {
        this.#unwritten.delete(unwritten);
        return reply;
      },
      (error: unknown) => {
        this.#unwritten.delete(unwritten);
        // Withdrawn before node-redis wrote it: the connection failed first. (A command it
        // wrote is rejected with the connection's error instead.)
        const withdrawn =
          unwritten.signal.aborted &&
          error instanceof Error &&
          error.constructor.name === 'AbortError';
        throw withdrawn ? this.#notSent() : error;
      },
    );
  }

  #notSent(): NotSentError {
    if (!this.#client.isOpen && !this.#everOpened && this.#readies === 0 && !this.#lastError) {
      const fix = 'call `await client.connect()` before handing it to distlock';
      const cause = new ClientNotOpenedError(this.name, fix);
      return new NotSentError(`not connected to ${this.name}: ${cause.message}`, { cause });
    }
    const cause = this.#scheme.found ?? this.#lastError;
    const why = lastErrorText(cause);
    const state = this.#client.isOpen ? 'reconnecting' : 'closed';
    return new NotSentError(`not connected to ${this.name} (${state})${why}`, { cause });
  }

  /**
   * Waits for a connection attempt under way; fails at once when the client is between
   * attempts or closed, so that a dead node costs nothing.
   */
  #ready(timeoutMs: number): Promise<void> {
    const client = this.#client;
    if (!client.isOpen) return Promise.reject(this.#notSent());
    if (this.#betweenAttempts || this.#scheme.found) {
      // Asked in the background (at most once until the connection is ready again): a
      // connection between attempts costs nothing.
      this.#scheme.afterFailure(this.#lastError);
      return Promise.reject(this.#notSent());
    }
    this.#readyOrFailed ??= new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (ready: boolean) => {
        if (settled) return;
        settled = true;
        attempt.stop();
        client.off('ready', onReady);
        client.off('error', onFailed);
        client.off('end', onFailed);
        this.#readyOrFailed = undefined;
        resolve(ready);
      };
      const onReady = () => settle(true);
      // Whether the server speaks the other scheme is asked first, so that the failure says.
      const attempt = this.#scheme.watchAttempt(
        () => this.#lastError,
        () => settle(false),
      );
      const onFailed = attempt.failed;
      client.on('ready', onReady);
      client.on('error', onFailed);
      client.on('end', onFailed);
    });
    // Every waiter shares one set of listeners; each bounds its own wait.
    return readyWithin(this.#readyOrFailed, timeoutMs).then((ready) => {
      if (!ready) throw this.#notSent();
    });
  }

  /** A single-node connection that gets MOVED was given a Cluster node: say so. */
  readonly #movedMeansCluster = (error: unknown): never => {
    if (!(error instanceof Error) || !error.message.startsWith('MOVED ')) throw error;
    throw new ClusterNodeError(
      `${this.name} is a Redis Cluster node (it answered ${error.message}): give the locker ` +
        'a Cluster client, not a client of one of its nodes',
    );
  };
}

/** Resolves once `subscriber` is ready; rejects when its connection attempt fails or it closes. */
function subscriberReady(subscriber: NodeRedisSubscriberLike): Promise<void> {
  if (subscriber.isReady) return Promise.resolve();
  if (!subscriber.isOpen) return Promise.reject(new Error('the subscriber is closed'));
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      subscriber.off('ready', settle);
      subscriber.off('error', settle);
      subscriber.off('end', settle);
      if (subscriber.isReady) resolve();
      else reject(error ?? new Error('the subscriber is closed'));
    };
    subscriber.on('ready', settle);
    subscriber.on('error', settle);
    subscriber.on('end', settle);
  });
}

/** Where a client connects, for {@link SchemeCheck}: none for a Unix socket. */
function schemeTarget(options: object | undefined): SchemeTarget | undefined {
  const { socket } = (options ?? {}) as {
    socket?: { host?: string; port?: number; path?: string; tls?: boolean; servername?: string };
  };
  if (socket?.path) return undefined;
  const { host = 'localhost', port = 6379, tls = false, servername } = socket ?? {};
  return { host, port, tls, servername };
}

/** `host:port` (or the socket path), with `/db` when not 0. */
function nodeName(options: object | undefined): string {
  const { socket, database } = (options ?? {}) as {
    socket?: { host?: string; port?: number; path?: string };
    database?: number;
  };
  const where = socket?.path ?? `${socket?.host ?? 'localhost'}:${socket?.port ?? 6379}`;
  return database ? `${where}/${database}` : where;
}
