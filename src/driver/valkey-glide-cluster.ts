import {
  clusterNameOf,
  keyOf,
  masterInfo,
  needsSlotRefresh,
  redirectionMessage,
  WAIT_UNSUPPORTED,
} from './cluster-routing.js';
import {
  NotSentError,
  onePerClient,
  type RedisConnection,
  readyWithin,
  type Subscriber,
} from './connection.js';
import { keySlot } from './libraries.js';
import { type GlideClientLike, GlideConnection } from './valkey-glide.js';

/** Where valkey-glide sends a command of a Cluster client (its `Routes`, the ones used here). */
type GlideRoute =
  | 'allPrimaries'
  | 'randomNode'
  | { type: 'primarySlotKey'; key: string }
  | { type: 'primarySlotId'; id: number }
  | { type: 'routeByAddress'; host: string; port: number };

/**
 * The subset of a valkey-glide (2.x) `GlideClusterClient` that the adapter uses. Structural:
 * distlock does not depend on valkey-glide.
 */
export interface GlideClusterClientLike {
  customCommand(
    args: string[],
    options?: { route?: GlideRoute; decoder?: number },
  ): Promise<unknown>;
  close(errorMessage?: string): void;
  /** Only a Cluster client has it. */
  pubsubShardChannels(options?: never): Promise<unknown>;
}

/** What the adapter reads from a client's settings (private in valkey-glide's types). */
interface GlideClusterSettings {
  readonly addresses?: readonly { readonly host?: string; readonly port?: number }[];
  readonly requestTimeout?: number;
}

/** True when `value` looks like a valkey-glide `GlideClusterClient`. */
export function isGlideClusterClientLike(value: unknown): value is GlideClusterClientLike {
  const v = value as { [K in keyof GlideClusterClientLike]?: unknown } | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.customCommand === 'function' &&
    typeof v.pubsubShardChannels === 'function'
  );
}

/**
 * The longest valkey-glide may keep trying one command of distlock's own client (its
 * `requestTimeout`, valkey-glide's default): it retries a command on another master while
 * the slot's master fails over, and gives up on it only then.
 */
const MAX_REQUEST_TIMEOUT_MS = 250;

/** How old the slot table used for stall tracking may get before it is read again. */
const SLOT_TABLE_MAX_AGE_MS = 10_000;

/** `CLUSTER SLOTS` rows: `[first slot, last slot, [host, port, id], ...replicas]`. */
type SlotRows = readonly (readonly [number, number, readonly [string, number, ...unknown[]]])[];

/**
 * {@link RedisConnection} over a valkey-glide 2.x `GlideClusterClient`, one lock service.
 * distlock opens a client of its own with the caller's settings (read from its internal
 * `config`, like the standalone adapter's subscriber), without the caller's subscriptions and
 * with a `requestTimeout` of at most {@link MAX_REQUEST_TIMEOUT_MS}, and closes it with the
 * locker. Each command is routed to the master of its key's slot; `INFO` goes to every master.
 *
 * **Limit.** valkey-glide cannot be told not to retry: within its `requestTimeout` it follows
 * MOVED and ASK itself (so they are rarely reported) and sends a command again to the master
 * that replaced a failed one. Such a command runs at most once, but possibly after distlock
 * stopped waiting for it when the locker's `nodeTimeoutMs` is shorter than 250 ms: the window
 * this adapter leaves is `requestTimeout - nodeTimeoutMs`. Commands held by valkey-glide
 * while it reconnects are covered as in the standalone adapter ({@link GlideConnection}:
 * after a failure, nothing more is sent until a `PING` is answered).
 *
 * **Reshards.** valkey-glide follows MOVED and ASK (with `ASKING`) itself, at once. It holds
 * a command that got TRYAGAIN for about 1.3 s before it tries again, past this client's
 * `requestTimeout`: such a command (a script on several keys of a half-migrated slot) fails
 * with a timeout. Only a batch takes a timeout of its own, which would let the adapter retry
 * TRYAGAIN itself; but valkey-glide 2.5 holds a batch for a healthy master while another
 * master does not answer, so commands are sent alone.
 *
 * Stalls are tracked per master ({@link shardOf}) from a slot table of the adapter's own
 * (`CLUSTER SLOTS`), read again after a failure and every {@link SLOT_TABLE_MAX_AGE_MS}.
 */
export class GlideClusterConnection implements RedisConnection {
  readonly name: string;
  readonly openSubscriber?: (
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ) => Subscriber;
  /** Sharded subscribers, as for the caller's client (see `GlideConnection`). */
  readonly openShardedSubscriber?: (
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ) => Subscriber;
  readonly #open: () => Promise<GlideClusterClientLike>;
  /** The client once opened; `undefined` before, and after `close()`. */
  #client: GlideClusterClientLike | undefined;
  #openingClient: Promise<boolean> | undefined;
  #lastError: Error | undefined;
  #closed = false;
  /**
   * Per master (or slot, before the slot table is read), the standalone adapter over the
   * client routed there: error replies in Redis's form, RESP2 shapes, and, after a failure,
   * nothing more sent to that master until it answers a `PING`.
   */
  readonly #shards = new Map<string, GlideConnection>();
  /** Per slot, the master (`host:port`) serving it, as last read. */
  #masters: readonly (string | undefined)[] = [];
  #mastersReadAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | undefined;

  constructor(caller: GlideClusterClientLike) {
    this.name = glideClusterName(caller);
    const { createClient } = caller.constructor as unknown as {
      createClient: (settings: object) => Promise<GlideClusterClientLike>;
    };
    this.#open = () => {
      // Read anew for each attempt: valkey-glide updates it when the password changes.
      const settings = settingsOf(caller);
      const requestTimeout = settings.requestTimeout ?? MAX_REQUEST_TIMEOUT_MS;
      return createClient.call(caller.constructor, {
        ...settings,
        requestTimeout: Math.min(requestTimeout, MAX_REQUEST_TIMEOUT_MS),
        pubsubSubscriptions: undefined, // the caller's callback is not for distlock's client
        lazyConnect: false,
      });
    };
    // A second client with the caller's settings, as for a standalone client: sharded
    // (SSUBSCRIBE) when valkey-glide can add sharded subscriptions to a client it opened;
    // plain (a release published on any master reaches every node) as the fallback.
    const subscribers = new GlideConnection(caller as unknown as GlideClientLike);
    if (subscribers.openSubscriber) this.openSubscriber = subscribers.openSubscriber;
    if (subscribers.openShardedSubscriber) {
      this.openShardedSubscriber = subscribers.openShardedSubscriber;
    }
    void this.#opening();
  }

  /**
   * The connection for direct calls (fenced reads and writes) through the caller's own
   * client, as valkey-glide routes them.
   */
  static readonly ofCaller = onePerClient(
    (client: GlideClusterClientLike): RedisConnection =>
      new GlideConnection(
        routedView(() => client, 'randomNode'),
        glideClusterName(client),
      ),
  );

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    if (command === 'WAIT') return Promise.reject(new Error(WAIT_UNSUPPORTED));
    return this.#opened(timeoutMs).then(() =>
      this.#commandsOf(this.shardOf(command, args))
        .send(command, args, timeoutMs)
        .then(
          (reply) => (command === 'INFO' ? joinedInfo(reply) : reply),
          (error: unknown) => {
            if (needsSlotRefresh(error)) this.#readSlots();
            throw error;
          },
        ),
    );
  }

  /** The master (`host:port`) that serves the key of a command, for stall tracking per shard. */
  shardOf(command: string, args: readonly (string | number)[]): string | undefined {
    const key = keyOf(command, args);
    if (key === undefined) return undefined;
    if (performance.now() - this.#mastersReadAt > SLOT_TABLE_MAX_AGE_MS) this.#readSlots();
    const slot = keySlot(key);
    return this.#masters[slot] ?? `slot ${slot}`;
  }

  async connect(timeoutMs: number): Promise<void> {
    await this.#opened(timeoutMs).catch(() => undefined);
  }

  /** A connection to each master, once the slot table is known (see `RedisConnection`). */
  async masters(timeoutMs: number): Promise<readonly RedisConnection[]> {
    await this.#opened(timeoutMs);
    if (this.#masters.length === 0) {
      this.#readSlots();
      await readyWithin(this.#reading?.then(() => true) ?? Promise.resolve(true), timeoutMs);
    }
    const addresses = new Set(this.#masters.filter((a): a is string => a !== undefined));
    return [...addresses].sort().map((address) => this.#commandsOf(address));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#client?.close();
    this.#client = undefined;
  }

  /** Resolves once the client is open; NotSent after `timeoutMs`, or once closed. */
  async #opened(timeoutMs: number): Promise<void> {
    if (this.#client) return;
    if (!this.#closed && (await readyWithin(this.#opening(), timeoutMs))) return;
    throw this.#notSent();
  }

  /** Opens the client, once at a time; settles true once it is open. */
  #opening(): Promise<boolean> {
    this.#openingClient ??= this.#open().then(
      (client) => {
        if (this.#closed) client.close();
        else this.#client = client;
        this.#readSlots();
        return !this.#closed;
      },
      (error: unknown) => {
        if (error instanceof Error) this.#lastError = error;
        this.#openingClient = undefined; // the next command tries again
        return false;
      },
    );
    return this.#openingClient;
  }

  /** The adapter for the commands to one master (`host:port`), a slot, or (`undefined`) any. */
  #commandsOf(shard: string | undefined): GlideConnection {
    const key = shard ?? '';
    let commands = this.#shards.get(key);
    if (!commands) {
      const client = () => this.#client ?? Promise.reject(this.#notSent());
      const name = shard === undefined ? this.name : `${this.name} (${shard})`;
      commands = new GlideConnection(routedView(client, pingRoute(shard)), name);
      this.#shards.set(key, commands);
    }
    return commands;
  }

  /** Reads the slot table again, once at a time. */
  #readSlots(): void {
    const client = this.#client;
    if (!client || this.#reading) return;
    this.#mastersReadAt = performance.now();
    this.#reading = client
      .customCommand(['CLUSTER', 'SLOTS'], { route: 'randomNode', decoder: STRINGS })
      .then((rows) => {
        const masters = new Array<string | undefined>(16_384);
        for (const [first, last, [host, port]] of rows as SlotRows) {
          masters.fill(`${host}:${port}`, first, last + 1);
        }
        this.#masters = masters;
      })
      .catch(() => undefined) // the next failure reads it again
      .finally(() => {
        this.#reading = undefined;
      });
  }

  #notSent(): NotSentError {
    const cause = this.#lastError;
    const state = this.#closed ? 'closed' : 'its client is not open yet';
    const why = cause ? `: ${cause.message}` : '';
    return new NotSentError(`not sent to ${this.name} (${state})${why}`, { cause });
  }
}

/**
 * A Cluster client seen as one node by {@link GlideConnection}: each command carries its
 * route, and a redirection valkey-glide gave up following is reported as the reply that said
 * it. `client` is asked for at each command (it may not be open yet).
 */
function routedView(
  client: () => GlideClusterClientLike | Promise<GlideClusterClientLike>,
  keyless: GlideRoute,
): GlideClientLike {
  return {
    customCommand: async (argv, options) => {
      const route = routeOf(argv, keyless);
      return (await client()).customCommand(argv, { ...options, route }).catch((error) => {
        throw redirected(error);
      });
    },
    close: () => {}, // the view's owner closes the client
  };
}

function settingsOf(client: GlideClusterClientLike): GlideClusterSettings {
  return (client as { config?: GlideClusterSettings }).config ?? {};
}

/** `cluster host:port,...` from the seed addresses, as an ioredis Cluster is named. */
function glideClusterName(client: GlideClusterClientLike): string {
  const addresses = settingsOf(client).addresses ?? [];
  return clusterNameOf(addresses.map((a) => `${a.host ?? 'localhost'}:${a.port ?? 6379}`));
}

/** valkey-glide's `Decoder.String`. */
const STRINGS = 1;

/**
 * The master of the command's key, every master for INFO, `keyless` for the others (the
 * standalone adapter's PING after a failure).
 */
function routeOf(argv: readonly string[], keyless: GlideRoute): GlideRoute {
  const [command = '', ...args] = argv;
  if (command === 'INFO') return 'allPrimaries';
  const key = keyOf(command, args);
  return key === undefined ? keyless : { type: 'primarySlotKey', key };
}

/** Where the PING that checks one shard goes: its master (`host:port`), or a slot's. */
function pingRoute(shard: string | undefined): GlideRoute {
  const slot = /^slot (\d+)$/.exec(shard ?? '')?.[1];
  if (slot !== undefined) return { type: 'primarySlotId', id: Number(slot) };
  const address = /^(.+):(\d+)$/.exec(shard ?? '');
  if (!address) return 'randomNode';
  return { type: 'routeByAddress', host: address[1] ?? '', port: Number(address[2]) };
}

/** valkey-glide's names of the redirections, as it words an error reply. */
const GLIDE_REDIRECTION =
  /^An error was signalled by the server:\s*- (Moved|Ask|TryAgain|ClusterDown)(?:: ([\s\S]*))?$/;

/** A redirection reply as Redis words it, with what it means for the lock. */
function redirected(error: unknown): unknown {
  const match = error instanceof Error ? GLIDE_REDIRECTION.exec(error.message) : null;
  if (!match) return error;
  const code = match[1]?.toUpperCase() ?? '';
  return new Error(redirectionMessage(`${code} ${match[2] ?? ''}`.trim()) ?? code);
}

/**
 * `INFO` of every master (`[address, info, ...]` in RESP2 shape) as one text, each master's
 * named (see `masterInfo`).
 */
function joinedInfo(reply: unknown): unknown {
  if (!Array.isArray(reply)) return reply;
  const infos: string[] = [];
  for (let index = 0; index + 1 < reply.length; index += 2) {
    infos.push(masterInfo(String(reply[index + 1]), String(reply[index])));
  }
  return infos.join('\r\n');
}
