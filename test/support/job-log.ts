import { existsSync, readFileSync } from 'node:fs';
import { groupRunning } from '../../src/cli/process-group.js';

/**
 * The shell line a job under `distlock run` or `distlock cron` starts with: it logs
 * `start <pgid>` (`sh -c` leads the job's process group) to `file`.
 */
export const logStart = (file: string) => `echo start $$ >> ${file}`;

/** One job seen in a job log, with the instants (performance.now()) a watch saw it. */
export interface JobSeen {
  readonly group: number;
  readonly startedAt: number;
  /** When its process group was first seen gone. */
  endedAt: number | undefined;
}

/**
 * Watches a job log (lines `start <pgid>`, see {@link logStart}) and the groups it names, a
 * poll every few ms: the log is read before the groups are looked at, so a start read while
 * an earlier job's group still runs is an overlap, however short, never a false one.
 */
export class JobLogWatch {
  readonly jobs: JobSeen[] = [];
  /** Each overlap: the group that started, and those still running then. */
  readonly overlaps: string[] = [];
  readonly #file: string;
  readonly #timer: NodeJS.Timeout;

  constructor(file: string, everyMs = 5) {
    this.#file = file;
    this.#timer = setInterval(() => this.poll(), everyMs);
  }

  /** Reads the log once, then which groups still run. */
  poll(): void {
    const text = existsSync(this.#file) ? readFileSync(this.#file, 'utf8') : '';
    const now = performance.now();
    const started = text.split('\n').flatMap((line) => {
      const [word, group] = line.split(' ');
      return word === 'start' && Number(group) > 1 ? [Number(group)] : [];
    });
    const fresh = started.slice(this.jobs.length);
    for (const group of fresh) this.jobs.push({ group, startedAt: now, endedAt: undefined });
    const running = this.jobs.filter((job) => {
      if (job.endedAt !== undefined) return false;
      if (groupRunning(job.group)) return true;
      job.endedAt = now;
      return false;
    });
    if (running.length > 1) {
      const groups = running.map((job) => job.group);
      this.overlaps.push(`${groups.join(' and ')} ran at once`);
    }
  }

  /** Stops polling, after a last look. */
  stop(): void {
    clearInterval(this.#timer);
    this.poll();
  }

  /** Resolves once `count` jobs have started, within `withinMs`. */
  async started(count: number, withinMs = 15_000): Promise<JobSeen> {
    const deadline = performance.now() + withinMs;
    while (this.jobs.length < count) {
      if (performance.now() > deadline) {
        throw new Error(`${this.#file}: ${this.jobs.length} of ${count} jobs in ${withinMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.jobs[count - 1] as JobSeen;
  }
}
