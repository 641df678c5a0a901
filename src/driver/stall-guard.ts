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
  #inFlight = 0;
  // Any answer, even an error, shows the node (or its connection) is moving again.
  readonly #answered = (reply: unknown) => {
    this.#inFlight--;
    this.#stalled = false;
    return reply;
  };
  readonly #failed = (error: unknown) => {
    this.#inFlight--;
    this.#stalled = false;
    throw error;
  };

  constructor(inner: RedisConnection) {
    this.#inner = inner;
    this.name = inner.name;
    this.forced = {
      name: inner.name,
      send: (command, args, timeoutMs) => this.#track(command, args, timeoutMs),
      close: () => inner.close(),
    };
  }

  /** Whether the node has a command that outlived its timeout and is still unanswered. */
  get stalled(): boolean {
    return this.#stalled;
  }

  /**
   * Called when a command sent through this guard outlived its timeout. Only a node with a
   * command still unanswered counts as stalled: that answer is what clears the mark.
   */
  markStalled(): void {
    if (this.#inFlight > 0) this.#stalled = true;
  }

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    if (this.#stalled) {
      return Promise.reject(
        new NotSentError(`${this.name} has not answered an earlier command; nothing sent`),
      );
    }
    return this.#track(command, args, timeoutMs);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  #track(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    this.#inFlight++;
    return this.#inner.send(command, args, timeoutMs).then(this.#answered, this.#failed);
  }
}
