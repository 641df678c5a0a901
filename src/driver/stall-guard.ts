import { NotSentError, type RedisConnection } from './connection.js';

/**
 * Keeps commands from piling up behind a node that stopped answering (paused, black-holed):
 * once a command outlives its timeout, new commands to that node fail at once without being
 * sent, until the node answers anything again.
 *
 * Deletes of our own keys go through {@link StallGuard.forced} and are always sent: a `SET`
 * that reached a stalled node before the stall was noticed must be undone when it wakes up.
 */
export class StallGuard implements RedisConnection {
  readonly name: string;
  /** The same node without the guard, for cleanup commands that must always be sent. */
  readonly forced: RedisConnection;
  readonly #inner: RedisConnection;
  #stalled = false;

  constructor(inner: RedisConnection) {
    this.#inner = inner;
    this.name = inner.name;
    this.forced = {
      name: inner.name,
      send: (command, args, signal) => this.#track(command, args, signal),
      close: () => inner.close(),
    };
  }

  /** Whether the node has a command that outlived its timeout and is still unanswered. */
  get stalled(): boolean {
    return this.#stalled;
  }

  send(command: string, args: readonly (string | number)[], signal: AbortSignal): Promise<unknown> {
    if (this.#stalled) {
      return Promise.reject(
        new NotSentError(`${this.name} has not answered an earlier command; nothing sent`),
      );
    }
    return this.#track(command, args, signal);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  async #track(
    command: string,
    args: readonly (string | number)[],
    signal: AbortSignal,
  ): Promise<unknown> {
    const onTimeout = () => {
      this.#stalled = true;
    };
    signal.addEventListener('abort', onTimeout, { once: true });
    try {
      return await this.#inner.send(command, args, signal);
    } finally {
      signal.removeEventListener('abort', onTimeout);
      // Any answer, even an error, shows the node (or its connection) is moving again.
      this.#stalled = false;
    }
  }
}
