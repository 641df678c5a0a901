import { existsSync, readFileSync } from 'node:fs';
import { groupRunning } from '../../src/cli/process-group.js';

/**
 * The shell line a job under `distlock run` or `distlock cron` starts with: it logs
 * `start <pgid> <distlock's pid>` to `file` (`sh -c` leads the job's process group, and
 * distlock starts it).
 */
export const logStart = (file: string) => `echo start $$ $PPID >> ${file}`;

/** One job seen in a job log, with the instants (performance.now()) a watch saw it. */
export interface JobSeen {
  readonly group: number;
  /** The pid of the distlock that started it. */
  readonly distlock: number;
  readonly startedAt: number;
  /** When its process group was first seen gone. */
  endedAt: number | undefined;
}

/**
 * Watches a job log (lines `start <pgid> <pid>`, see {@link logStart}) and the groups it
 * names, a poll every few ms: the log is read before the groups are looked at, so a start
 * read while an earlier job's group still runs is an overlap, however short, never a false one.
 */
export class JobLogWatch {
  readonly jobs: JobSeen[] = [];
  /** Each pair of jobs seen running at once, once, the earlier first. */
  readonly overlapping: (readonly [JobSeen, JobSeen])[] = [];
  readonly #file: string;
  readonly #timer: NodeJS.Timeout;

  constructor(file: string, everyMs = 5) {
    this.#file = file;
    this.#timer = setInterval(() => this.poll(), everyMs);
  }

  /** Each overlap, in words: `<earlier group> and <later group> ran at once`. */
  get overlaps(): string[] {
    return this.overlapping.map(
      ([earlier, later]) => `${earlier.group} and ${later.group} ran at once`,
    );
  }

  /** Reads the log once, then which groups still run. */
  poll(): void {
    const text = existsSync(this.#file) ? readFileSync(this.#file, 'utf8') : '';
    const now = performance.now();
    const started = text.split('\n').flatMap((line) => {
      const [word, group, distlock] = line.split(' ');
      return word === 'start' && Number(group) > 1 ? [[Number(group), Number(distlock)]] : [];
    });
    for (const [group = 0, distlock = 0] of started.slice(this.jobs.length)) {
      this.jobs.push({ group, distlock, startedAt: now, endedAt: undefined });
    }
    const running = this.jobs.filter((job) => {
      if (job.endedAt !== undefined) return false;
      if (groupRunning(job.group)) return true;
      job.endedAt = now;
      return false;
    });
    for (const [at, later] of running.entries()) {
      for (const earlier of running.slice(0, at)) {
        const known = this.overlapping.some(([a, b]) => a === earlier && b === later);
        if (!known) this.overlapping.push([earlier, later]);
      }
    }
  }

  /** Stops polling, after a last look. */
  stop(): void {
    clearInterval(this.#timer);
    this.poll();
  }

  /** Resolves once `count` jobs have started, within `withinMs`. */
  async started(count: number, withinMs = 15_000): Promise<JobSeen> {
    const job = await this.startedWithin(count, withinMs);
    if (job === undefined) {
      throw new Error(`${this.#file}: ${this.jobs.length} of ${count} jobs in ${withinMs} ms`);
    }
    return job;
  }

  /** The `count`th job once it has started, or `undefined` if it has not within `withinMs`. */
  async startedWithin(count: number, withinMs: number): Promise<JobSeen | undefined> {
    const deadline = performance.now() + withinMs;
    while (this.jobs.length < count) {
      if (performance.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.jobs[count - 1];
  }
}
