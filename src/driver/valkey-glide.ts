import {
  ClusterNodeError,
  lastErrorText,
  NotSentError,
  onePerClient,
  type RedisConnection,
  readyWithin,
  type Subscriber,
} from './connection.js';

/** valkey-glide's `Decoder.String`: replies as strings, whatever the client's default. */
const AS_STRINGS = { decoder: 1 };

/** valkey-glide's `ProtocolVersion.RESP3`, which its pub/sub requires. */
const RESP3 = 0;

/**
 * The subset of a valkey-glide (2.x) standalone client, `GlideClient`, that the adapter uses.
 * Structural: distlock does not depend on valkey-glide.
 */
export interface GlideClientLike {
  customCommand(args: string[], options?: { decoder?: number }): Promise<unknown>;
  /** Subscribes and waits for the server's confirmation (valkey-glide 2.3+). */
  subscribe?(channels: string[], timeoutMs: number): Promise<unknown>;
  /** Unsubscribes without waiting for the server; from every channel without `channels`. */
  unsubscribeLazy?(channels?: string[]): Promise<unknown>;
  /** A `GlideClusterClient`'s sharded subscribe, confirmed by the server (valkey-glide 2.3+). */
  ssubscribe?(channels: string[], timeoutMs: number): Promise<unknown>;
  /** Its sharded unsubscribe, not waiting; from every sharded channel without `channels`. */
  sunsubscribeLazy?(channels?: string[]): Promise<unknown>;
  close(errorMessage?: string): void;
  /** A `GlideClusterClient` has it; a Cluster is not one node. */
  readonly pubsubShardChannels?: never;
}

/** What the adapter reads from a client's settings (private in valkey-glide's types). */
interface GlideSettings {
  readonly addresses?: readonly { readonly host?: string; readonly port?: number }[];
  readonly databaseId?: number;
}

/** A message as valkey-glide hands it to a subscriber's callback. */
interface GlideMessage {
  readonly channel: unknown;
  readonly message: unknown;
}

/** True when `value` looks like a valkey-glide standalone client (not a `GlideClusterClient`). */
export function isGlideClientLike(value: unknown): value is GlideClientLike {
  const v = value as { [K in keyof GlideClientLike]?: unknown } | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.customCommand === 'function' &&
    typeof v.close === 'function' &&
    typeof v.pubsubShardChannels !== 'function' // cluster clients only
  );
}

/** Failures after which valkey-glide's connection may be down (it says nothing else). */
const CONNECTION_FAILURES = new Set(['ConnectionError', 'TimeoutError', 'ClosingError']);

/** How long a subscriber's SUBSCRIBE waits for the server's confirmation. */
const SUBSCRIBE_TIMEOUT_MS = 1_000;

/** The pause before opening a subscriber again when its node could not be reached. */
const REOPEN_DELAY_MS = 1_000;

/**
 * {@link RedisConnection} over a valkey-glide 2.x `GlideClient` (`customCommand`).
 *
 * valkey-glide reports no connection events: while it reconnects, it parks each command
 * until the connection is back (then sends it) or its `requestTimeout` passes. So once a
 * command failed with a connection error or a timeout, the adapter sends nothing more until
 * a `PING` is answered, which it waits for at most `timeoutMs` (a {@link NotSentError}
 * otherwise). Limit: the first command after an unnoticed connection loss is parked by
 * valkey-glide itself, and sent if the connection is back within `requestTimeout`: keep the
 * client's `requestTimeout` (default 250 ms) at or below the locker's `nodeTimeoutMs`.
 *
 * Error replies are rebuilt in Redis's own form ("NOSCRIPT No matching script...");
 * valkey-glide reports them as "An error was signalled by the server: - NoScriptError: ...".
 * RESP3 maps and sets (valkey-glide's default protocol) become flat arrays.
 *
 * Pub/sub uses a second client made with the first one's settings (read from its internal
 * `config`, and its class's `createClient`), created with an empty subscription callback and
 * subscribed dynamically (valkey-glide 2.3+); without these, waiters poll. valkey-glide
 * renews that client's subscriptions after a reconnect by itself and reports no reconnects,
 * so `onReady` is called only once the subscriber client is open (again, after a failed open).
 */
export class GlideConnection implements RedisConnection {
  readonly name: string;
  readonly openSubscriber?: (
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ) => Subscriber;
  /**
   * Sharded subscribers, for a `GlideClusterClient` (valkey-glide 2.3+): `SSUBSCRIBE` added
   * to a client of their own, which valkey-glide keeps on the master of each channel's slot,
   * also when the slot moves.
   */
  readonly openShardedSubscriber?: (
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ) => Subscriber;
  readonly #client: GlideClientLike;
  /** Why the connection is thought down: set by a failure, cleared by any answer. */
  #lost: Error | undefined;
  #probe: Promise<boolean> | undefined;

  /** `name`: how errors and events name the node; by default its host and port. */
  constructor(client: GlideClientLike, name?: string) {
    this.#client = client;
    // Read anew for each subscriber: valkey-glide updates it when the password changes.
    const settings = () => (client as { config?: GlideSettings }).config;
    this.name = name ?? nodeName(settings());
    const { createClient } = client.constructor as {
      createClient?: (settings: object) => Promise<GlideClientLike>;
    };
    if (
      settings() &&
      typeof createClient === 'function' &&
      typeof client.subscribe === 'function'
    ) {
      const opener = (onMessage: (channel: string, message?: string) => void) => () =>
        createClient.call(client.constructor, {
          ...settings(),
          protocol: RESP3,
          defaultDecoder: AS_STRINGS.decoder,
          lazyConnect: false,
          pubsubSubscriptions: {
            channelsAndPatterns: {},
            callback: (message: GlideMessage) =>
              onMessage(String(message.channel), String(message.message)),
          },
        });
      this.openSubscriber = (onMessage, onReady) =>
        new GlideSubscriber(opener(onMessage), 'plain', onReady);
      if (typeof client.ssubscribe === 'function') {
        this.openShardedSubscriber = (onMessage, onReady) =>
          new GlideSubscriber(opener(onMessage), 'sharded', onReady);
      }
    }
  }

  /** The adapter of a client the caller owns: made once per client, then reused. */
  static readonly of = onePerClient(
    (client: GlideClientLike, name?: string) => new GlideConnection(client, name),
  );

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    const argv = [command, ...args.map(String)];
    if (this.#lost === undefined) return this.#run(argv);
    return this.#reconnected(timeoutMs).then(() => this.#run(argv));
  }

  /**
   * Sends without waiting for a PING answer first: the undo of a `SET` that timed out on a
   * paused node must be in line behind it, to run when the node goes on.
   */
  sendAlways(command: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.#run([command, ...args.map(String)]);
  }

  async close(): Promise<void> {
    this.#client.close();
  }

  #run(argv: string[]): Promise<unknown> {
    return this.#client.customCommand(argv, AS_STRINGS).then(
      (reply) => {
        this.#lost = undefined;
        return resp2Shape(reply);
      },
      (error: unknown) => {
        throw this.#failed(error);
      },
    );
  }

  /** Notes what a failure says about the connection; returns the error to report. */
  #failed(error: unknown): unknown {
    if (!(error instanceof Error)) return error;
    const reply = CONNECTION_FAILURES.has(error.name) ? undefined : replyError(error);
    if (!reply) {
      // No answer from the server: its connection may be down. (A timeout says less than
      // the connection error that may have come before it.)
      if (this.#lost === undefined || error.name !== 'TimeoutError') this.#lost = error;
      return error;
    }
    this.#lost = undefined; // the server answered
    if (!reply.message.startsWith('MOVED ')) return reply;
    return new ClusterNodeError(
      `${this.name} is a Redis Cluster node (it answered ${reply.message}): distlock takes a ` +
        'Redis Cluster through an ioredis Cluster client, not a client of one of its nodes',
    );
  }

  /** Resolves once the node answered a PING; rejects with NotSent after `timeoutMs`. */
  #reconnected(timeoutMs: number): Promise<void> {
    // valkey-glide parks the PING until it reconnects: harmless, unlike a lock command.
    this.#probe ??= this.#client
      .customCommand(['PING'], AS_STRINGS)
      .then(
        () => {
          this.#lost = undefined;
          return true;
        },
        (error: unknown) => {
          this.#failed(error); // an error reply (NOPERM) is an answer too
          return this.#lost === undefined;
        },
      )
      .finally(() => {
        this.#probe = undefined;
      });
    return readyWithin(this.#probe, timeoutMs).then((answered) => {
      if (answered) return;
      const cause = this.#lost;
      const why = lastErrorText(cause);
      throw new NotSentError(`not connected to ${this.name}${why}`, { cause });
    });
  }
}

/**
 * A subscriber client, opened again after a pause when its node could not be reached, until
 * closed. valkey-glide keeps its subscriptions across reconnects by itself.
 */
class GlideSubscriber implements Subscriber {
  readonly #open: () => Promise<GlideClientLike>;
  readonly #onReady: (() => void) | undefined;
  readonly #sharded: boolean;
  #client: GlideClientLike | undefined;
  #opening: Promise<GlideClientLike> | undefined;
  #reopen: NodeJS.Timeout | undefined;
  #closed = false;

  /** `mode` sharded: `SSUBSCRIBE` (on a `GlideClusterClient`), else `SUBSCRIBE`. */
  constructor(
    open: () => Promise<GlideClientLike>,
    mode: 'plain' | 'sharded',
    onReady?: () => void,
  ) {
    this.#open = open;
    this.#sharded = mode === 'sharded';
    this.#onReady = onReady;
    this.#connected().catch(() => undefined); // retried after a pause
  }

  subscribe(channel: string): Promise<unknown> {
    return this.#connected().then((client) =>
      this.#sharded
        ? client.ssubscribe?.([channel], SUBSCRIBE_TIMEOUT_MS)
        : client.subscribe?.([channel], SUBSCRIBE_TIMEOUT_MS),
    );
  }

  async unsubscribe(channel: string): Promise<unknown> {
    const client = this.#client;
    return this.#sharded
      ? client?.sunsubscribeLazy?.([channel])
      : client?.unsubscribeLazy?.([channel]);
  }

  /**
   * valkey-glide drops a closed client's connection only seconds later, still subscribed:
   * it unsubscribes first, so that releases are not published to it meanwhile.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#reopen);
    const client = this.#client;
    this.#client = undefined;
    const unsubscribed = this.#sharded ? client?.sunsubscribeLazy?.() : client?.unsubscribeLazy?.();
    await unsubscribed?.catch(() => undefined);
    client?.close();
  }

  #connected(): Promise<GlideClientLike> {
    if (this.#client) return Promise.resolve(this.#client);
    if (this.#closed) return Promise.reject(new Error('the subscriber was closed'));
    clearTimeout(this.#reopen);
    this.#opening ??= this.#open().then(
      (client) => {
        this.#opening = undefined;
        if (this.#closed) {
          client.close();
          throw new Error('the subscriber was closed');
        }
        this.#client = client;
        this.#onReady?.();
        return client;
      },
      (error: unknown) => {
        this.#opening = undefined;
        if (!this.#closed) {
          this.#reopen = setTimeout(
            () => this.#connected().catch(() => undefined),
            REOPEN_DELAY_MS,
          );
          this.#reopen.unref();
        }
        throw error;
      },
    );
    return this.#opening;
  }
}

/** valkey-glide's names for the error codes it recognises; others keep their code. */
const CODES: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  NoScriptError: 'NOSCRIPT',
  Moved: 'MOVED',
  Ask: 'ASK',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  NotBusy: 'NOTBUSY',
  PermissionDenied: 'NOPERM',
};

/** "An error was signalled by the server: - NoScriptError: No matching script..." */
const KNOWN_REPLY = /^An error was signalled by the server:\s*- (\w+)(?:: ([\s\S]*))?$/;
/** An error code valkey-glide does not know: "WRONGPASS: invalid username-password pair" */
const OTHER_REPLY = /^([A-Z][A-Z0-9_]*): ([\s\S]*)$/;

/** The server's error reply in Redis's form (`CODE detail`), or `undefined` for other errors. */
function replyError(error: Error): Error | undefined {
  const known = KNOWN_REPLY.exec(error.message);
  const code = known ? CODES[known[1] ?? ''] : OTHER_REPLY.exec(error.message)?.[1];
  if (!code) return undefined;
  const detail = known ? known[2] : OTHER_REPLY.exec(error.message)?.[2];
  const reply = new Error(detail ? `${code} ${detail}` : code, { cause: error });
  reply.name = error.name;
  return reply;
}

/** RESP3 maps (valkey-glide's `{ key, value }` lists, or `Map`s) and sets as RESP2 arrays. */
function resp2Shape(reply: unknown): unknown {
  if (reply instanceof Set) return [...reply].map(resp2Shape);
  if (reply instanceof Map) return [...reply].flatMap(([key, value]) => [key, resp2Shape(value)]);
  if (!Array.isArray(reply)) return reply;
  const isMap = reply.length > 0 && reply.every(isEntry);
  if (isMap) return reply.flatMap(({ key, value }: Entry) => [key, resp2Shape(value)]);
  return reply.map(resp2Shape);
}

interface Entry {
  readonly key: unknown;
  readonly value: unknown;
}

function isEntry(item: unknown): item is Entry {
  return typeof item === 'object' && item !== null && 'key' in item && 'value' in item;
}

/** `host:port` of the first address, with `/db` when not 0. */
function nodeName(settings: GlideSettings | undefined): string {
  const address = settings?.addresses?.[0];
  const where = `${address?.host ?? 'localhost'}:${address?.port ?? 6379}`;
  return settings?.databaseId ? `${where}/${settings.databaseId}` : where;
}
