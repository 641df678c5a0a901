import { readdirSync, readFileSync } from 'node:fs';

/**
 * Whether a member of process group `pgid` is still running. An orphan that exited stays a
 * member until init reaps it, and in a container init may never do so: on Linux, /proc tells
 * such zombies from running members. A group we may not signal (EPERM) counts as running.
 */
export function groupRunning(pgid: number): boolean {
  if (!answers(-pgid)) return false;
  if (process.platform !== 'linux') return true;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  return entries.some((entry) => {
    const stat = /^\d+$/.test(entry) ? procStat(Number(entry)) : undefined;
    return stat !== undefined && stat.pgrp === pgid && stat.state !== 'Z';
  });
}

/** Whether process `pid` is still running: not gone, and not a zombie waiting to be reaped. */
export function processRunning(pid: number): boolean {
  if (!answers(pid)) return false;
  if (process.platform !== 'linux') return true;
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Whether signal 0 to `target` (a pid, or minus a group's id) finds someone. */
function answers(target: number): boolean {
  try {
    process.kill(target, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The state and process group of `pid`, from /proc; `undefined` once it is gone. */
function procStat(pid: number): { state: string; pgrp: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // exited meanwhile
  }
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
  const [state = '', , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state, pgrp: Number(pgrp) };
}
