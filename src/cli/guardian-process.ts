/**
 * The guardian of the commands that `distlock run` and `distlock cron` run: a process of its
 * own, started by distlock in a session of its own, so that neither a kill of distlock's
 * process group nor a hang-up of distlock's terminal reaches it. It stops the command (its
 * process group, SIGTERM then SIGKILL) before the lease can run out whenever distlock does
 * not extend it in time: distlock killed (SIGKILL, the OOM killer, a crash), stopped
 * (SIGSTOP, a debugger, a cgroup freezer), starved or slow. guardian-plan.ts says when.
 *
 * Argument: `<graceMs>`, how long the command gets between SIGTERM and SIGKILL, if the lease
 * lasts that long. Stdout: `ready` once it listens, then `clock <ms>` in answer to each
 * `clock` line: its reading of the clock it shares with distlock (shared-clock.ts), which
 * distlock checks before it runs a command. Stdin, a line at a time:
 * - `clock`: asks for that reading;
 * - `group <pgid>` (a process group) or `process <pid>` (`--foreground`: the command alone):
 *   what to stop, from now on;
 * - `lease <toldAt> <endsAt>`: the lease of that command, as told at `toldAt`, can run out
 *   from `endsAt` on (instants on the shared clock, so that a line read late is acted on at
 *   once); told when the command is named and after every extension. The first lease of a
 *   named command is answered with `guarding <pid>` on stdout: distlock lets the command run
 *   only then, so that no command runs that the guardian does not know;
 * - `free`: the command ended; nothing to guard until the next one is named (cron);
 * - `done`: nothing more to guard; the guardian exits.
 * Stdin ending without `done`, while a command is named, means distlock died: SIGTERM at
 * once, SIGKILL as guardian-plan.ts says. The guardian exits once stdin has ended and the
 * command it stops is gone (or got SIGKILL).
 */
import { type LeaseTold, stopPlan } from './guardian-plan.js';
import { groupRunning, processRunning } from './process-group.js';
import { sharedNow } from './shared-clock.js';

/** How often a command told to stop is checked for members still running. */
const POLL_MS = 20;

const graceMs = Number(process.argv[2]);
if (!(graceMs >= 0)) {
  process.stderr.write(`distlock guardian: expected <graceMs>, got ${process.argv[2]}\n`);
  process.exit(2);
}

/** What to stop, once distlock names it. */
let target: { kind: 'group' | 'process'; pid: number } | undefined;
let lease: LeaseTold | undefined;
/** Whether distlock was told that the named command is guarded. */
let confirmed = false;
let termSentAt: number | undefined;
let distlockGone = false;
let dismissed = false;
let timer: NodeJS.Timeout | undefined;
let pending = '';

// A line that cannot be written (a closed pipe: distlock gone already) must not stop it.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  const lines = (pending + chunk).split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) heard(line);
  act();
});
// A read error ends stdin too: distlock can no longer be heard, the same as its death.
process.stdin.on('error', () => undefined);
// Deno's stdin ends without a 'close': either event means distlock is gone, once.
const ended = () => {
  if (distlockGone) return;
  distlockGone = true;
  act();
};
process.stdin.on('end', ended);
process.stdin.on('close', ended);
process.stdout.write('ready\n');

function heard(line: string): void {
  const [word = '', first, second] = line.split(' ');
  if (word === 'clock') {
    process.stdout.write(`clock ${sharedNow()}\n`);
  } else if (word === 'done') {
    dismissed = true;
    forget();
  } else if (word === 'free') {
    forget();
  } else if ((word === 'group' || word === 'process') && Number(first) > 1) {
    forget();
    target = { kind: word, pid: Number(first) }; // never 1 or below: -1 would be every process
  } else if (word === 'lease') {
    // Not numbers: no lease left at all.
    lease = { toldAt: Number(first) || 0, endsAt: Number(second) || 0 };
    if (target && !confirmed) {
      confirmed = true;
      process.stdout.write(`guarding ${target.pid}\n`);
    }
  }
}

function forget(): void {
  clearTimeout(timer);
  target = undefined;
  lease = undefined;
  confirmed = false;
  termSentAt = undefined;
}

/** Does what is due for the named command now, and plans the next step. */
function act(): void {
  clearTimeout(timer);
  if (!target || dismissed || (!lease && !distlockGone)) return;
  const now = sharedNow();
  const { termAt, killAt } = stopPlan(lease, graceMs, { now, termSentAt, distlockGone });
  // Looked at only when a signal is due (or after SIGTERM): it reads /proc.
  const due = termSentAt !== undefined || now >= termAt || now >= killAt;
  if (due && !running(target)) {
    forget();
    return;
  }
  const left = `${Math.max(0, Math.floor((lease?.endsAt ?? now) - now))} ms left on the lease`;
  const why = distlockGone
    ? `distlock ended while its command ran, with ${left}`
    : `no extension of the command's lease came in time, with ${left}`;
  if (now >= killAt) {
    send('SIGKILL');
    log(`${why}; sent SIGKILL to ${named(target)}`);
    forget();
    return;
  }
  if (termSentAt === undefined && now >= termAt) {
    termSentAt = now;
    send('SIGTERM');
    log(
      `${why}; sent SIGTERM to ${named(target)}, SIGKILL in ${Math.ceil(killAt - now)} ms if it still runs`,
    );
  }
  const next = termSentAt === undefined ? termAt : Math.min(killAt, now + POLL_MS);
  timer = setTimeout(actAfterReading, Math.max(1, Math.ceil(next - now)));
}

/**
 * Acts once what distlock wrote meanwhile has been read: a guardian that ran late (stopped,
 * starved) finds its timer due and newer lines waiting at once; the event loop reads them
 * before it runs an immediate.
 */
function actAfterReading(): void {
  setImmediate(act);
}

function running({ kind, pid }: { kind: 'group' | 'process'; pid: number }): boolean {
  return kind === 'group' ? groupRunning(pid) : processRunning(pid);
}

function send(signal: NodeJS.Signals): void {
  if (!target) return;
  try {
    process.kill(target.kind === 'group' ? -target.pid : target.pid, signal);
  } catch (error) {
    // ESRCH: the command is already gone. Anything else must not pass for that.
    const { code, message } = error as NodeJS.ErrnoException;
    if (code !== 'ESRCH') log(`could not send ${signal} to ${named(target)}: ${message}`);
  }
}

function named({ kind, pid }: { kind: 'group' | 'process'; pid: number }): string {
  return kind === 'group' ? `process group ${pid}` : `process ${pid}`;
}

function log(line: string): void {
  process.stderr.write(`distlock: ${line}\n`);
}
