import { appendFileSync, rmSync } from 'node:fs';
import { markOwned } from './leftovers.js';

/**
 * Processes and folders to remove even when a test throws or the process exits early. Each
 * folder is also marked with this process and its server, so that if this process is killed
 * outright (SIGKILL: no exit hook runs), a later one can reap them (`reapLeftoverServers`).
 */
interface Owned {
  pid: number | undefined;
  dir: string;
}

const live = new Set<Owned>();
let hooked = false;

/** Registers a process + temp dir for cleanup at exit; returns the handle to update it. */
export function track(dir: string): Owned {
  hookExit();
  const owned: Owned = { pid: undefined, dir };
  markOwned(dir);
  live.add(owned);
  return owned;
}

/** Records a started pid (and, for the test suite's final check, logs it). */
export function trackPid(owned: Owned, pid: number): void {
  owned.pid = pid;
  markOwned(owned.dir, pid);
  const log = process.env.DISTLOCK_TEST_PID_LOG;
  if (log) appendFileSync(log, `${pid}\n`);
}

/** Forgets a handle whose process and folder are gone. */
export function untrack(owned: Owned): void {
  live.delete(owned);
}

function killAllNow(): void {
  for (const owned of live) {
    if (owned.pid !== undefined) {
      try {
        process.kill(owned.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(owned.dir, { recursive: true, force: true });
  }
  live.clear();
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAllNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAllNow();
      // The listener is gone now, so re-raising gives the default behaviour (exit).
      process.kill(process.pid, signal);
    });
  }
}
