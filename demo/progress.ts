import type { HistoryEvent } from '../src/testing/index.js';
import type { Fault } from './report.js';

/** The two numbers the progress line and the summary share. */
export interface Tally {
  /** Holdings recorded (the summary's `acquisitions`). */
  readonly acquisitions: number;
  /** Writes the store applied (the summary's expected counter value). */
  readonly counter: number;
}

/** What the live line counts, the way checkHistory counts it. */
function tally(events: readonly HistoryEvent[]): Tally {
  return {
    acquisitions: events.filter((e) => e.type === 'holding').length,
    counter: events.filter((e) => e.type === 'write' && e.outcome === 'applied').length,
  };
}

/** How the progress line is fed; times in ms on the demo's monotonic clock. */
export interface ProgressOptions {
  /** Nominal length of the run, for the bar; the line shows the real elapsed time. */
  readonly seconds: number;
  readonly startedAt: number;
  readonly now: () => number;
  /** The history so far; it may end in a line a worker is still writing. */
  readonly history: () => HistoryEvent[];
  readonly faults: readonly Fault[];
}

/**
 * One status line, redrawn four times a second on a terminal (one line per second
 * otherwise): elapsed time, acquisitions, the counter, and the last fault. {@link finish}
 * draws the last line from the numbers the summary prints, on a terminal and in a pipe alike.
 */
export class Progress {
  readonly #timer: NodeJS.Timeout;
  readonly #options: ProgressOptions;
  #last: Tally = { acquisitions: 0, counter: 0 };
  #lastPrinted = -1;
  /** Seconds from the start to the first event: the workers' start-up. */
  #workingSince: number | undefined;

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#timer = setInterval(() => this.#tick(), 250);
  }

  /** Stops the live line and prints the final one with `final`, the summary's numbers. */
  finish(final: Tally): void {
    clearInterval(this.#timer);
    this.#print(final, true);
  }

  #tick(): void {
    try {
      this.#last = tally(this.#options.history());
    } catch (error) {
      // A worker may be halfway through appending a line: keep the last count until it is done.
      if (!(error instanceof SyntaxError)) throw error;
    }
    this.#print(this.#last, false);
  }

  #print({ acquisitions, counter }: Tally, final: boolean): void {
    const { seconds, startedAt, now, faults } = this.#options;
    const elapsed = (now() - startedAt) / 1_000;
    // Each worker runs `seconds` from its own start, a second or two after the demo's: the bar
    // counts from the first event and the line shows the real time since the demo started.
    if (this.#workingSince === undefined && acquisitions + counter > 0)
      this.#workingSince = elapsed;
    const working = elapsed - (this.#workingSince ?? elapsed);
    const width = 24;
    const done = final ? width : Math.min(width, Math.round((working / seconds) * width));
    const bar = `[${'#'.repeat(done)}${'.'.repeat(width - done)}]`;
    const fault = faults.at(-1)?.label ?? 'none yet';
    const state = final
      ? '  (done)'
      : this.#workingSince === undefined
        ? '  (workers starting)'
        : '';
    const line = `${bar} ${elapsed.toFixed(1)}s  acquisitions ${acquisitions}  counter ${counter}  last fault: ${fault}${state}`;
    if (process.stdout.isTTY) {
      process.stdout.write(`\r\x1b[2K${line}${final ? '\n' : ''}`);
    } else if (final || Math.floor(elapsed) !== this.#lastPrinted) {
      this.#lastPrinted = Math.floor(elapsed);
      process.stdout.write(`${line}\n`);
    }
  }
}
