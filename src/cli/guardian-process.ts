/**
 * The guardian of a command that `distlock run` runs: a process of its own, started by
 * distlock in a session of its own, so that neither a kill of distlock's process group nor a
 * hang-up of distlock's terminal reaches it. When distlock dies without dismissing it
 * (SIGKILL, the OOM killer, a crash), nothing extends the lease any more and another holder
 * may take the lock once it runs out: the guardian stops the command before that.
 *
 * Argument: `<graceMs>`, how long the command gets between SIGTERM and SIGKILL, if the lease
 * lasts that long. Stdout: `ready` once it listens; distlock starts the command only then,
 * so that every figure below is read as soon as it is written. Stdin, a line at a time:
 * - `group <pgid>` (the command's process group) or `process <pid>` (`--foreground`: the
 *   command alone): what to stop;
 * - the lease's validity left, in milliseconds from now (monotonic clocks are per process, so
 *   no instant is sent), after the command starts and after every extension;
 * - `done`: the command needs no guarding any more.
 * Stdin ending without `done`, once a command is named, means distlock died: SIGTERM, then
 * SIGKILL `min(graceMs, validity left - SAFETY_MARGIN_MS)` later (at once when that is not
 * positive); the guardian exits once the command is gone, or after its SIGKILL. Stdin ending
 * before a command is named: the guardian just exits. (distlock names the command as soon as
 * it has started it; killed in between, it leaves the command unguarded.)
 */
import { groupRunning, processRunning } from './process-group.js';

/** How long before the lease runs out the guardian's SIGKILL goes, at the latest. */
const SAFETY_MARGIN_MS = 200;

/** How often a command told to stop is checked for members still running. */
const POLL_MS = 20;

const graceMs = Number(process.argv[2]);
if (!(graceMs >= 0)) {
  process.stderr.write(`distlock guardian: expected <graceMs>, got ${process.argv[2]}\n`);
  process.exit(2);
}

/** What to stop, once distlock names it. */
let target: { kind: 'group' | 'process'; pid: number } | undefined;
/** When the lease runs out, by this process's monotonic clock; unknown = already. */
let leaseEnds: number | undefined;
let dismissed = false;
let pending = '';

// A line that cannot be written (a closed pipe: distlock gone already) must not stop it.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  const lines = (pending + chunk).split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) heard(line);
});
// A read error ends stdin too: distlock can no longer be heard, the same as its death.
process.stdin.on('error', () => undefined);
// Deno's stdin ends without a 'close': either event means distlock is gone, once.
let heardEnd = false;
const ended = () => {
  if (heardEnd) return;
  heardEnd = true;
  if (!dismissed && target) stop(target);
};
process.stdin.on('end', ended);
process.stdin.on('close', ended);
process.stdout.write('ready\n');

function heard(line: string): void {
  const [word = '', pid] = line.split(' ');
  if (word === 'done') {
    dismissed = true;
  } else if ((word === 'group' || word === 'process') && Number(pid) > 1) {
    target = { kind: word, pid: Number(pid) }; // never 1 or below: -1 would be every process
  } else {
    leaseEnds = performance.now() + (Number(word) || 0); // not a number: nothing left
  }
}

/** Stops the command: SIGTERM, then SIGKILL before the lease runs out. */
function stop({ kind, pid }: { kind: 'group' | 'process'; pid: number }): void {
  const what = kind === 'group' ? `process group ${pid}` : `process ${pid}`;
  const send = (signal: NodeJS.Signals) => {
    try {
      process.kill(kind === 'group' ? -pid : pid, signal);
    } catch (error) {
      // ESRCH: the command is already gone. Anything else must not pass for that.
      const { code, message } = error as NodeJS.ErrnoException;
      if (code !== 'ESRCH') log(`could not send ${signal} to ${what}: ${message}`);
    }
  };
  const leftMs = Math.max(0, Math.floor((leaseEnds ?? 0) - performance.now()));
  const killInMs = Math.min(graceMs, leftMs - SAFETY_MARGIN_MS);
  const why = `distlock ended while its command ran, with ${leftMs} ms left on the lease`;
  if (killInMs <= 0) {
    send('SIGKILL');
    log(`${why}; sent SIGKILL to ${what}`);
    return;
  }
  send('SIGTERM');
  log(`${why}; sent SIGTERM to ${what}, SIGKILL in ${killInMs} ms if it still runs`);
  const running = kind === 'group' ? () => groupRunning(pid) : () => processRunning(pid);
  let poll: NodeJS.Timeout | undefined;
  const kill = setTimeout(() => {
    clearTimeout(poll);
    send('SIGKILL');
  }, killInMs);
  const check = () => {
    if (running()) poll = setTimeout(check, POLL_MS);
    else clearTimeout(kill);
  };
  check();
}

function log(line: string): void {
  process.stderr.write(`distlock: ${line}\n`);
}
