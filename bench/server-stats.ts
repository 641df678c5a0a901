/**
 * What the Redis servers spent on a measured window, summed over the nodes, read before and
 * after it on connections of their own: the commands' time from `INFO commandstats` (the
 * `INFO` calls themselves left out), and the main thread's CPU from `INFO cpu`.
 *
 * Redis 7 counts a command a script runs both in the script's time and in its own, so the
 * commands' time of a script-based library is overstated by its scripts' inner commands
 * (a fraction of a µs each). The main thread's CPU has no such overlap, and also counts
 * reading requests and writing replies.
 */
import { Redis } from 'ioredis';

/** Summed over the nodes: commands run, µs spent on them, µs of main-thread CPU. */
export interface ServerWork {
  readonly calls: number;
  readonly usec: number;
  readonly cpuUs: number;
}

/** Connections that read the servers' command statistics; not used by any contender. */
export class ServerStats {
  private constructor(private readonly admins: readonly Redis[]) {}

  static async open(urls: readonly string[]): Promise<ServerStats> {
    const admins = urls.map((url) => new Redis(url, { lazyConnect: true }));
    await Promise.all(admins.map((admin) => admin.connect()));
    return new ServerStats(admins);
  }

  /** The totals so far; subtract two readings to get a window's work. */
  async read(): Promise<ServerWork> {
    const infos = await Promise.all(
      this.admins.map((admin) => admin.call('INFO', 'commandstats', 'cpu') as Promise<string>),
    );
    let calls = 0;
    let usec = 0;
    let cpuUs = 0;
    for (const info of infos) {
      for (const match of info.matchAll(/^used_cpu_(?:user|sys)_main_thread:([\d.]+)/gm)) {
        cpuUs += Number(match[1]) * 1e6;
      }
      for (const match of info.matchAll(/^cmdstat_(\S+?):calls=(\d+),usec=(\d+)/gm)) {
        if (match[1] === 'info') continue;
        calls += Number(match[2]);
        usec += Number(match[3]);
      }
    }
    return { calls, usec, cpuUs };
  }

  close(): void {
    for (const admin of this.admins) admin.disconnect();
  }
}

/** The work between two readings. */
export function workBetween(before: ServerWork, after: ServerWork): ServerWork {
  return {
    calls: after.calls - before.calls,
    usec: after.usec - before.usec,
    cpuUs: after.cpuUs - before.cpuUs,
  };
}
