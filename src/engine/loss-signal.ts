import type { Clock } from '../clock.js';
import { LockLostError } from '../errors.js';

/**
 * The `AbortSignal` of one lock: it aborts with a {@link LockLostError} when the lock is lost,
 * at the latest at the local validity deadline. Created on first use only, so that locks
 * whose holders never look at it cost no controller and no timer.
 */
export class LossSignal {
  #controller: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lost: LockLostError | undefined;
  #deadline = 0;
  #stopped = false;
  /** Why the lease could not be extended, said when its deadline passes. */
  #unextended: string | undefined;

  constructor(
    private readonly resource: string,
    private readonly clock: Clock,
    private readonly onDeadline: (error: LockLostError) => void,
  ) {}

  /**
   * The signal, armed at the current deadline. Read after the deadline, it is aborted at once:
   * its timer may not have run yet (the event loop was busy), or may not exist (first read).
   */
  signal(deadline: number): AbortSignal {
    const signal = this.watch(deadline);
    if (!this.#lost && !this.#stopped && this.clock.now() >= deadline) this.#expire();
    return signal;
  }

  /** Starts watching `deadline` (its timer fires the signal), but never fires it at once. */
  watch(deadline: number): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#lost) this.#controller.abort(this.#lost);
      else this.arm(deadline);
    }
    return this.#controller.signal;
  }

  /** (Re)arms the deadline timer after an acquisition or extension. */
  arm(deadline: number): void {
    this.#deadline = deadline;
    if (!this.#controller || this.#lost || this.#stopped) return;
    clearTimeout(this.#timer);
    const fire = () => {
      const late = this.#deadline - this.clock.now();
      // Timers may fire a little early; never declare the loss before the deadline.
      if (late > 0) {
        this.#timer = setTimeout(fire, Math.ceil(late));
        this.#timer.unref();
        return;
      }
      this.#expire();
    };
    this.#timer = setTimeout(fire, Math.max(0, Math.ceil(deadline - this.clock.now())));
    this.#timer.unref();
  }

  #expire(): void {
    this.onDeadline(validityRanOut(this.resource, this.#unextended));
  }

  /** Notes why the last extension failed without losing the lock, for the loss at the deadline. */
  cannotExtend(why: string): void {
    this.#unextended = why;
  }

  /** Fires the signal (once) with `error`. */
  lose(error: LockLostError): void {
    if (this.#lost) return;
    this.#lost = error;
    clearTimeout(this.#timer);
    this.#controller?.abort(error);
  }

  /** Stops watching the deadline: the holder released the lock. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }
}

/** The loss of a lock whose validity deadline passed without a successful extension. */
export function validityRanOut(resource: string, unextended?: string): LockLostError {
  const why = unextended === undefined ? '' : ` (${unextended})`;
  return new LockLostError(resource, `its validity ran out without a successful extension${why}`);
}
