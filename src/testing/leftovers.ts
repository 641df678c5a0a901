import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  writeFileSync,
} from 'node:fs';
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
  try {
    writeFileSync(`${file}.tmp`, JSON.stringify(marker), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  } catch {
    // Best effort (a full disk): the node runs; only a reaper will not know it.
  }
}

/**
 * Kills the redis-servers, and removes the temp dirs, that the testing kit started in a
 * process that has died without stopping them (it was SIGKILLed, or crashed). Touches only
 * temp dirs with the kit's marker whose owner is gone (by pid and start time), and kills
 * only a process that is still the server the marker names (same pid, same start time):
 * never another process's nodes, nor a process that reused a pid. `startRedis` and
 * `RedisServer.start` call it once per process; a test suite's global setup may call it too.
 */
export function reapLeftoverServers(
  /** Where the nodes' temp dirs are. @default the OS temp dir */
  dir = tmpdir(),
): Reaped {
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

/**
 * The marker of `dir`, when both are this user's own and nobody else may write them: a
 * directory (not a link) of mode 0700, as `mkdtemp` makes it, holding a regular file. In a
 * shared temp dir, another user could otherwise plant a marker naming a process of ours.
 */
function readMarker(dir: string): Marker | undefined {
  try {
    const file = join(dir, MARKER);
    if (!isPrivate(lstatSync(dir), true) || !isPrivate(lstatSync(file), false)) return undefined;
    const marker = JSON.parse(readFileSync(file, 'utf8')) as Marker;
    return isIdentity(marker.owner) && (marker.server === null || isIdentity(marker.server))
      ? marker
      : undefined;
  } catch {
    return undefined; // no marker: not the kit's dir, or not marked yet
  }
}

function isPrivate(stats: Stats, directory: boolean): boolean {
  const uid = process.getuid?.();
  const kind = directory ? stats.isDirectory() : stats.isFile();
  return kind && (uid === undefined || stats.uid === uid) && (stats.mode & 0o022) === 0;
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
      // The same text whatever the caller's locale and time zone.
      env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' },
    }).trim();
    return started === '' ? undefined : { pid, started };
  } catch {
    return undefined;
  }
}
