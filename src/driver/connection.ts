/**
 * The longest a locker waits for connections that are still being opened: its first
 * operation waits for them up to this long; later ones do not wait.
 */
export const CONNECT_WAIT_MS = 2_000;

/**
 * The whole of what the lock algorithm needs from a Redis connection. An adapter per client
 * library implements it; the algorithm never touches a client library directly.
 */
export interface RedisConnection {
  /** Stable, human-readable node name used in errors and events, e.g. `127.0.0.1:6379`. */
  readonly name: string;
  /**
   * Sends one command and resolves with its raw reply. It must never park the command in a
   * client-side queue: when the connection is not ready it waits for readiness at most
   * `timeoutMs`, and then rejects with a {@link NotSentError} without sending.
   */
  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown>;
  /** Closes the connection. Called only for connections distlock opened itself. */
  close(): Promise<void>;
  /**
   * Optional: resolves once a connection that is still being opened is ready (or has failed,
   * or `timeoutMs` passed). Awaited once before a locker's first operation, so that opening
   * connections does not eat the first request's per-node timeout.
   */
  connect?(timeoutMs: number): Promise<void>;
  /**
   * Opens a separate connection for pub/sub, used to wake waiters when a lock is released.
   * Optional: without it, waiters poll. `onReady` is called each time the connection is
   * (re)established: the caller then subscribes again to every channel it wants, so the
   * subscriber need not remember its channels across reconnects (nor those whose subscribe
   * failed while it was down).
   */
  openSubscriber?(onMessage: (channel: string) => void, onReady?: () => void): Subscriber;
}

/** A pub/sub connection to one node. */
export interface Subscriber {
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * The command was not sent to the node (its connection was down, or it had not answered an
 * earlier command). Such a node cannot hold anything this command would have written.
 */
export class NotSentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotSentError';
  }
}
