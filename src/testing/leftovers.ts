import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Every node's temp dir starts with this, in the OS temp dir. A dir is reaped only when it
 * also holds a {@link MARKER} naming a dead owner.
 */
export const DIR_PREFIX = 'distlock-redis-';

/** The file in a node's temp dir that says which process started it, and its server. */
const MARKER = 'distlock-owner.json';

/**
 * A process as it was when it was recorded: its pid, and when it started, so that a later
 * process reusing the pid is not taken for it.
 */
interface ProcessIdentity {
  readonly pid: number;
  readonly started: string;
}

interface Marker {
  readonly owner: ProcessIdentity;
  readonly server: ProcessIdentity | null;
}

/** What {@link reapLeftoverServers} removed. */
export interface Reaped {
  /** redis-server processes killed (their owner had died without stopping them). */
  readonly servers: number;
  /** Temp dirs removed. */
  readonly dirs: number;
}

let ownIdentity: ProcessIdentity | undefined;

/**
 * Writes `dir`'s marker: this process owns it, and `serverPid` (when given) is the
 * redis-server running in it. Written whole or not at all (write, then rename), so that a
 * reaper never reads half of one.
 */
export function markOwned(dir: string, serverPid?: number): void {
  ownIdentity ??= identify(process.pid);
  if (ownIdentity === undefined) return; // cannot tell: never reaped, as before
  const server = serverPid === undefined ? null : (identify(serverPid) ?? null);
  const marker: Marker = { owner: ownIdentity, server };
  const file = join(dir, MARKER);
  writeFileSync(`${file}.tmp`, JSON.stringify(marker));
  renameSync(`${file}.tmp`, file);
}

/**
 * Kills the redis-servers, and removes the temp dirs, that the testing kit started in a
 * process that has died without stopping them (it was SIGKILLed, or crashed). Touches only
 * temp dirs with the kit's marker whose owner is gone (by pid and start time), and kills
 * only a process that is still the server the marker names (same pid, same start time):
 * never another process's nodes, nor a process that reused a pid. `startRedis` and
 * `RedisServer.start` call it once per process; a test suite's global setup may call it too.
 */
export function reapLeftoverServers(dir = tmpdir()): Reaped {
  let servers = 0;
  let dirs = 0;
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.startsWith(DIR_PREFIX));
  } catch {
    return { servers, dirs };
  }
  for (const name of names) {
    const nodeDir = join(dir, name);
    const marker = readMarker(nodeDir);
    if (marker === undefined || isAlive(marker.owner)) continue;
    if (marker.server !== null && isAlive(marker.server)) {
      try {
        process.kill(marker.server.pid, 'SIGKILL');
        servers++;
      } catch {
        continue; // not ours to kill (another user's): leave its dir too
      }
    }
    try {
      rmSync(nodeDir, { recursive: true, force: true });
      dirs++;
    } catch {
      // another user's dir, or removed meanwhile by another reaper
    }
  }
  return { servers, dirs };
}

function readMarker(dir: string): Marker | undefined {
  try {
    const marker = JSON.parse(readFileSync(join(dir, MARKER), 'utf8')) as Marker;
    return isIdentity(marker.owner) && (marker.server === null || isIdentity(marker.server))
      ? marker
      : undefined;
  } catch {
    return undefined; // no marker: not the kit's dir, or not marked yet
  }
}

function isIdentity(value: unknown): value is ProcessIdentity {
  const identity = value as ProcessIdentity | null;
  return (
    typeof identity === 'object' &&
    identity !== null &&
    Number.isSafeInteger(identity.pid) &&
    identity.pid > 0 &&
    typeof identity.started === 'string'
  );
}

function isAlive(recorded: ProcessIdentity): boolean {
  return identify(recorded.pid)?.started === recorded.started;
}

/**
 * `pid` and when it started, or `undefined` when no such process runs: from `/proc` on
 * Linux (start time in clock ticks since boot), from `ps` elsewhere.
 */
function identify(pid: number): ProcessIdentity | undefined {
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the command name, which may itself hold spaces and parentheses; the
      // state is field 3 and the start time field 22.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') return undefined; // exited, not yet reaped by its parent
      const started = fields[19];
      return started === undefined ? undefined : { pid, started };
    } catch {
      return undefined;
    }
  }
  try {
    const started = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return started === '' ? undefined : { pid, started };
  } catch {
    return undefined;
  }
}
