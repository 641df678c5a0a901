import { readFileSync } from 'node:fs';

/**
 * Whether process `pid` runs. An exited process that nobody reaped yet (a zombie: in a
 * container, init may never reap orphans) still answers signal 0, but it is gone all the same.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return process.platform !== 'linux'; // no /proc to tell: assume it runs
  }
}
