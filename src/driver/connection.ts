/**
 * The longest a locker waits for connections that are still being opened: its first
 * operation waits for them up to this long; later ones do not wait.
 */
export const CONNECT_WAIT_MS = 2_000;

/**
 * What a locker's first operation allows for opening connections and meeting the nodes
 * (asking which server each is), however short its wait.
 */
export const CONNECT_GRACE_MS = 500;

/**
 * The whole of what the lock algorithm needs from a Redis connection. An adapter per client
 * library implements it; the algorithm never touches a client library directly. distlock
 * ships adapters for ioredis 5 and 6, iovalkey, node-redis 5 and 6 and valkey-glide 2 (pass
 * their clients as nodes); implement this interface to use any other client.
 *
 * **Commands.** distlock sends `SET key token PX ttl NX`, `EVALSHA`/`EVAL` (its Lua scripts,
 * which also `PUBLISH`, or on a Cluster `SPUBLISH`, releases), `INFO`, `WAIT`, `PTTL`, `GET` and `HMGET`, with string and
 * integer arguments; arguments are Redis bulk strings, so a number may be sent as its decimal
 * string.
 *
 * **Replies**, in their RESP2 shapes whatever protocol the connection speaks:
 * - simple and bulk strings as JS strings (`SET` resolves `'OK'`, `GET` a string), never
 *   Buffers; `INFO` as one string (RESP3's verbatim string without its `txt:` prefix); a
 *   connection to a Redis Cluster answers with every master's, one after the other, each
 *   best with a line `distlock_master:<host:port> slots <ranges>` after its `# Server`
 *   header, so that a warning about one master can name it;
 * - integers as JS numbers (`INCR`, `PTTL`, `WAIT`, a script's `return 1`);
 * - nil (and RESP3 null) as `null`: `GET` of a missing key, a script's `return nil`, a Lua
 *   `false` inside a returned table;
 * - arrays as JS arrays, nested as the server nests them (a script's table), RESP3 maps as
 *   flat `[key, value, ...]` arrays and sets as arrays.
 *
 * **Error replies** reject with an `Error` whose `message` is the server's error line: it
 * starts with the Redis error code and a space (`NOSCRIPT No matching script...`,
 * `WRONGTYPE ...`, `NOPERM ...`, `MOVED 3999 10.0.0.2:6379`). That is how distlock detects
 * NOSCRIPT (a script cache flushed or a restarted node: it then sends `EVAL`), MOVED and
 * configuration errors; a client that words errors its own way must rebuild that line
 * (valkey-glide's adapter does). A failure that is not an error reply (a connection reset, a
 * client-side timeout) rejects with the client's error: the command may have reached the
 * node, which may then hold what it wrote (distlock undoes it there).
 */
export interface RedisConnection {
  /** Stable, human-readable node name used in errors and events, e.g. `127.0.0.1:6379`. */
  readonly name: string;
  /**
   * Sends one command and resolves with its reply (shapes above). It must never park the
   * command in a client-side queue: when the connection is not ready it waits for readiness
   * at most `timeoutMs` (0: not at all; it may fail at once when the node is known to be
   * down), and then rejects with a {@link NotSentError} without sending. A command must not
   * be sent later either: once it was rejected, or its connection failed before it was
   * written, it must never be written after a reconnect (a late `SET NX` would take a lock
   * nobody holds). Bounding the wait for the reply is the caller's business.
   */
  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown>;
  /** Closes the connection. Called only for connections distlock opened itself. */
  close(): Promise<void>;
  /**
   * Optional: a number that changes whenever the connection is (re)established, so that
   * commands may now reach another server than before (a restarted one, a promoted replica,
   * another server behind the same name). distlock then reads which server the node is
   * (`INFO`) before its next vote counts. It must change before
   * the first command is written on the new connection, and be cheap to read: it is read on
   * every acquisition attempt. Without it, distlock reads the node's identity again after
   * any failure of the connection and at least every second while it locks. For a Redis
   * Cluster (a connection with `shardOf`), it changes when the slot table names other
   * masters: distlock then reads their `INFO` again (and every 10 s without it).
   */
  readonly generation?: number;
  /**
   * Optional: resolves once a connection that is still being opened is ready (or has failed,
   * or `timeoutMs` passed). Awaited once before a locker's first operation, so that opening
   * connections does not eat the first request's per-node timeout.
   */
  connect?(timeoutMs: number): Promise<void>;
  /**
   * Opens a separate connection for pub/sub, used to wake waiters when a lock is released.
   * Optional: without it, waiters poll. `onMessage` gets the channel and the payload of each
   * message (without the payload, every waiter of the locker retries). `onReady` is called each time the connection is (re)established:
   * the caller then subscribes again to every channel it wants, so the subscriber need not
   * remember its channels across reconnects (nor those whose subscribe failed while it was
   * down); a channel subscribed twice must be harmless. Opening never throws: a subscriber
   * whose node is down keeps trying in the background until closed. `onLost`, when the client
   * subscribes again by itself before it reports the connection ready (node-redis does), must
   * be called as soon as the connection is lost, before any message of the next connection:
   * a message from a server that the subscriber reached again must not pass for one from the
   * server it reached before (see `HandOverCount`).
   */
  openSubscriber?(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
    onLost?: () => void,
  ): Subscriber;
  /**
   * Optional, for a Redis Cluster: like {@link RedisConnection.openSubscriber}, for sharded
   * channels. `subscribe` sends `SSUBSCRIBE` to the master that serves the channel's slot and
   * rejects with the server's error line when it refuses (`ERR unknown command` before Redis
   * 7, `NOPERM` for an ACL user without `+ssubscribe`): distlock then wakes waiters with plain
   * `PUBLISH` instead. A slot that moves to another master takes its subscriptions along: the
   * server ends them (a `sunsubscribe` push); the subscriber then either subscribes again at
   * the new master itself, or calls `onReady` once its slot table is read again, and distlock
   * subscribes again to every channel it wants. `onMessage` gets `smessage`s.
   */
  openShardedSubscriber?(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber;
  /**
   * Optional, for adapters that hold commands back after a failure (until the node proves it
   * answers again): sends at once anyway. Used only for compare-and-delete of distlock's own
   * keys, which must reach a node that may hold an earlier `SET`, however late.
   */
  sendAlways?(
    command: string,
    args: readonly (string | number)[],
    timeoutMs: number,
  ): Promise<unknown>;
  /**
   * Optional, for connections to several servers (a Redis Cluster): which server a command
   * goes to, so that one that stops answering delays only the commands sent to it.
   */
  shardOf?(command: string, args: readonly (string | number)[]): string | undefined;
  /**
   * Optional, for connections to several servers (a Redis Cluster): a connection to each
   * master the slot table names, for the keyless commands that must reach every one (`SCAN`,
   * which `Locker.list` sends). Waits up to `timeoutMs` for the slot table.
   */
  masters?(timeoutMs: number): Promise<readonly RedisConnection[]>;
}

/**
 * A pub/sub connection to one node. `subscribe` resolves once the server confirmed the
 * subscription and rejects (or waits for the connection) while it is down; a failure there
 * only means waiters poll until the next `onReady`. `close` ends the connection for good.
 */
export interface Subscriber {
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * The command was not sent to the node (its connection was down, or it had not answered an
 * earlier command), and never will be. Such a node cannot hold anything this command would
 * have written. A {@link RedisConnection} rejects with it only when that is certain: a
 * command that may have reached the node fails with the client's own error instead.
 */
export class NotSentError extends Error {
  /** `cause`: why the connection is down, when the client said (WRONGPASS, a TLS error...). */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NotSentError';
    // Its frames would only say where distlock chose not to send; `cause` has the client's.
    this.stack = `${this.name}: ${message}`;
  }
}

/**
 * A node given as one server answered MOVED: it belongs to a Redis Cluster, which distlock
 * must reach through a Cluster client. A configuration error: retrying cannot fix it.
 */
export class ClusterNodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterNodeError';
  }
}

/**
 * A client that the caller passed in but never opened (node-redis's `createClient()` without
 * `await client.connect()`): distlock never opens a caller's client. A configuration error:
 * retrying cannot fix it.
 */
export class ClientNotOpenedError extends Error {
  constructor(node: string, fix: string) {
    super(`the client for ${node} was never connected: ${fix}`);
    this.name = 'ClientNotOpenedError';
  }
}

/**
 * Whether `error` is the server's own error reply (its message starts with a Redis error code:
 * `ERR ...`, `NOSCRIPT ...`, `READONLY ...`), rather than a failure of the connection (a
 * reset, a closed socket, a command not sent): after one of those, the node may be another
 * server when the connection is back.
 */
export function isErrorReply(error: unknown): boolean {
  if (error instanceof ClusterNodeError) return true; // a MOVED reply, reworded
  return (
    error instanceof Error &&
    !(error instanceof NotSentError) &&
    /^[A-Z][A-Z_]+( |$)/.test(error.message)
  );
}

/**
 * How a "not connected" error quotes the client's last error: `": <message>"` on one line
 * (OpenSSL's alert texts carry a newline), or nothing. A `NOAUTH` also says what it means,
 * since clients word it differently (ioredis 6 sends `HELLO` first and gets "NOAUTH HELLO must
 * be called with the client already authenticated...").
 */
export function lastErrorText(cause: Error | undefined): string {
  if (!cause) return '';
  const message = cause.message.replace(/\s*\n\s*/g, ' ').trim();
  const meaning = /^NOAUTH\b/.test(message)
    ? ' (the server requires a password: none was sent)'
    : '';
  return `: ${message}${meaning}`;
}

/**
 * OpenSSL failures that retrying cannot fix: the server wants a client certificate or
 * rejects ours, distrusts our CA, or speaks no TLS at all (a plain port). A transient fault
 * (a bad record MAC, an internal error) is not one of them.
 */
const TLS_CONFIGURATION_ALERT =
  /^ERR_SSL_(.*CERTIFICATE.*|.*UNKNOWN_CA|WRONG_VERSION_NUMBER|.*HANDSHAKE_FAILURE)$/;

/** TLS failures that retrying cannot fix (Node's error codes). */
const TLS_CONFIGURATION_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * Errors of distlock's own that retrying cannot fix: a Cluster node given as a plain one, a
 * client never connected, `redis://` at a TLS port or the reverse.
 */
const CONFIGURATION_ERRORS = new Set([
  'ClusterNodeError',
  'ClientNotOpenedError',
  'TlsSchemeError',
]);

/**
 * The client's own error behind `error` when it is a {@link NotSentError} that says why the
 * connection is down (WRONGPASS, a TLS error, ECONNREFUSED); else `error` itself. By name, not
 * instanceof: the command's bundle has its own copies of the driver's classes, while the
 * errors come from the main bundle.
 */
export function connectionCause(error: unknown): unknown {
  let cause = error;
  while (cause instanceof Error && cause.name === 'NotSentError' && cause.cause !== undefined) {
    cause = cause.cause;
  }
  return cause;
}

/**
 * Whether `error` (or the connection error behind a {@link NotSentError}) is a configuration
 * problem that retrying cannot fix: a wrong or missing password, a user without the needed
 * permission, a certificate that does not verify.
 */
export function isConfigurationError(error: unknown): boolean {
  const cause = connectionCause(error);
  if (!(cause instanceof Error)) return false;
  if (CONFIGURATION_ERRORS.has(cause.name)) return true;
  if (/^(WRONGPASS|NOAUTH|NOPERM)\b/.test(cause.message)) return true;
  // A command an ACL user may not run inside a script: Redis says "ERR The user executing the
  // script can't run this command ..." (or "... can't access at least one of the keys"),
  // Valkey "ERR ACL failure in script: User u has no permissions to run the 'del' command ...".
  if (/^ERR (The user executing the script can't|ACL failure in script:)/.test(cause.message)) {
    return true;
  }
  const code = (cause as NodeJS.ErrnoException).code ?? '';
  return TLS_CONFIGURATION_CODES.has(code) || TLS_CONFIGURATION_ALERT.test(code);
}

/**
 * `settled` (true once a connection is ready, false once it failed), or false after
 * `timeoutMs`: several waiters share one `settled`, each with its own bound.
 */
export function readyWithin(settled: Promise<boolean>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  return Promise.race([settled, timedOut]).finally(() => clearTimeout(timer));
}

/**
 * `make`, called once per client: later calls with the same client return the same adapter,
 * so that adapting a client again (a second locker, every fenced write) adds no listeners.
 */
export function onePerClient<Client extends object, Adapter>(
  make: (client: Client, name?: string) => Adapter,
): (client: Client, name?: string) => Adapter {
  const adapters = new WeakMap<Client, Adapter>();
  return (client, name) => {
    let adapter = adapters.get(client);
    if (adapter === undefined) {
      adapter = make(client, name);
      adapters.set(client, adapter);
    }
    return adapter;
  };
}

const knownScriptSets = new WeakMap<RedisConnection, Set<string>>();

/**
 * The scripts that `connection`'s server is known to have loaded (see the scripts' `run`),
 * for this process. Connections that send over one socket share one set (see
 * {@link shareKnownScripts}): a NOSCRIPT seen through either must clear it for both.
 */
export function knownScripts(connection: RedisConnection): Set<string> {
  let known = knownScriptSets.get(connection);
  if (!known) {
    known = new Set();
    knownScriptSets.set(connection, known);
  }
  return known;
}

/** Makes `alias` (another view of the same socket) share `connection`'s known scripts. */
export function shareKnownScripts(alias: RedisConnection, connection: RedisConnection): void {
  knownScriptSets.set(alias, knownScripts(connection));
}
