import { setMaxListeners } from 'node:events';

/**
 * How a locker closes: it stops every wait still running, releases every lock it still holds,
 * lets those operations clean up (leave fair lines, undo attempts) while the connections are
 * still open, and only then lets the connections close.
 */
export class Shutdown {
  readonly #controller = new AbortController();
  /** Ends of the locks held now, each releasing its lock and firing its signal. */
  readonly #held = new Set<() => Promise<unknown>>();
  #acquiring = 0;
  #onIdle: (() => void) | undefined;
  #closing: Promise<void> | undefined;

  constructor() {
    // Every waiting acquisition listens for the close: thousands at once are normal.
    setMaxListeners(Number.POSITIVE_INFINITY, this.#controller.signal);
  }

  /** Aborts when `close()` begins. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get closed(): boolean {
    return this.#controller.signal.aborted;
  }

  /** An acquisition begins; `left()` must follow on every path. */
  entered(): void {
    this.#acquiring++;
  }

  left(): void {
    if (--this.#acquiring === 0) this.#onIdle?.();
  }

  /** Registers a held lock's end; the returned function unregisters it. */
  hold(end: () => Promise<unknown>): () => void {
    this.#held.add(end);
    return () => this.#held.delete(end);
  }

  /** Stops waits, ends held locks, and resolves when every acquisition has finished. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#controller.abort();
    const idle =
      this.#acquiring === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            this.#onIdle = resolve;
          });
    await Promise.all([...[...this.#held].map((end) => end()), idle]);
  }
}
