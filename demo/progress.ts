import type { HistoryEvent } from '../src/testing/index.js';
import type { Fault } from './report.js';

/**
 * One status line, redrawn four times a second on a terminal (one line per second
 * otherwise): elapsed time, acquisitions, the counter, and the last fault.
 */
export class Progress {
  readonly #timer: NodeJS.Timeout;
  readonly #startedAt = Date.now();
  #lastPrinted = -1;

  constructor(
    private readonly seconds: number,
    private readonly history: () => HistoryEvent[],
    private readonly faults: readonly Fault[],
  ) {
    this.#timer = setInterval(() => this.#draw(), 250);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#draw();
    if (process.stdout.isTTY) process.stdout.write('\n');
  }

  #draw(): void {
    const elapsed = Math.min(this.seconds, (Date.now() - this.#startedAt) / 1_000);
    const events = this.history();
    const holdings = events.filter((e) => e.type === 'holding').length;
    const applied = events.filter((e) => e.type === 'write' && e.outcome === 'applied').length;
    const width = 24;
    const done = Math.round((elapsed / this.seconds) * width);
    const bar = `[${'#'.repeat(done)}${'.'.repeat(width - done)}]`;
    const fault = this.faults.at(-1)?.label ?? 'none yet';
    const line = `${bar} ${elapsed.toFixed(1)}s  acquisitions ${holdings}  counter ${applied}  last fault: ${fault}`;
    if (process.stdout.isTTY) {
      process.stdout.write(`\r\x1b[2K${line}`);
    } else if (Math.floor(elapsed) !== this.#lastPrinted) {
      this.#lastPrinted = Math.floor(elapsed);
      process.stdout.write(`${line}\n`);
    }
  }
}
