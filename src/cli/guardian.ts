import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import type { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { LockerEmitter } from '../engine/events.js';
import type { Lock } from '../engine/lock.js';
import type { CommandGroup } from './command-group.js';
import { type LeaseTold, stopPlan } from './guardian-plan.js';
import { sharedNow } from './shared-clock.js';

/** What a guardian stops if distlock dies: a command's process group, or (foreground) it alone. */
export interface GuardedCommand {
  readonly pid: number;
  /** Whether `pid` leads a process group of its own, to be signalled whole. */
  readonly group: boolean;
}

type GuardianProcess = ChildProcessByStdio<Writable, Readable, null>;

/**
 * What the runtime running distlock needs before a script's path to run it as the guardian.
 * Deno grants a process it starts no permissions: the guardian signals the command (run)
 * and reads /proc to tell running members of its group from zombies (read).
 */
function runtimeArgs(): string[] {
  return 'Deno' in globalThis ? ['run', '--allow-run', '--allow-read=/proc'] : [];
}

/**
 * Lets the process exit with `pipe` still open. Node's child pipes are sockets; Bun's are
 * streams without `unref` (its child's `unref()` covers them), hence the check.
 */
function unrefPipe(pipe: Readable | Writable): void {
  (pipe as Partial<Pick<Socket, 'unref'>>).unref?.();
}

/**
 * distlock's side of the guardian of running commands (guardian-process.ts): a process in a
 * session of its own that stops a command before its lease can run out whenever distlock
 * does not extend it in time (killed, stopped, starved). distlock names each command to it
 * once its process exists but before it runs, with the instant its lease can run out, on a
 * clock both processes share (shared-clock.ts), then each later instant after an extension,
 * and frees it once the command has ended.
 *
 * @example
 * const guardian = Guardian.start(graceMs); // while the lock is taken
 * await guardian?.ready; // then start the command held back (`gated`), and:
 * guardian?.whenGone((why) => stopTheCommand(why));
 * const endsAt = sharedNow() + lock.remainingMs();
 * const admitted = guardian?.admit(command, { pid, group: true }, endsAt, () => !stopping);
 * const unfollow = guardian?.follow(lock, locker.events);
 * await admitted; // the command runs only once the guardian knows it
 * // ... once the command is done with:
 * await guardian?.dismiss();
 */
export class Guardian {
  /**
   * Resolves once the guardian listens and its clock agrees with distlock's; rejects if it
   * ends or cannot start before that, or if the clocks do not agree.
   */
  readonly ready: Promise<void>;
  readonly #child: GuardianProcess;
  #onGone: ((why: string) => void) | undefined;
  #gone: string | undefined;
  #dismissed = false;
  readonly #graceMs: number;
  /** The guarded command's lease, as last told. */
  #lease: LeaseTold | undefined;
  /** How far the guardian's clock may be behind distlock's (ms), from the check at start. */
  #uncertaintyMs = 0;
  /** The command named last, until the guardian confirms it guards it (or ends). */
  #confirming: { readonly pid: number; readonly confirmed: (yes: boolean) => void } | undefined;

  private constructor(child: GuardianProcess, graceMs: number) {
    this.#child = child;
    this.#graceMs = graceMs;
    const gone = (why: string) => {
      this.#gone ??= why;
      this.#confirm(undefined);
      if (!this.#dismissed) this.#onGone?.(why);
      this.#onGone = undefined;
    };
    child.once('error', (error) => gone(`could not start: ${error.message}`));
    child.once('exit', (code, signal) => gone(`ended (${signal ?? `exit code ${code}`})`));
    // A write to a guardian that died fails with EPIPE: its exit reports that, once.
    child.stdin.on('error', () => undefined);
    this.ready = new Promise<void>((resolve, reject) => {
      let askedAt = 0;
      let pending = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          if (line === 'ready') {
            askedAt = sharedNow();
            child.stdin.write('clock\n');
          } else if (line.startsWith('guarding ')) {
            this.#confirm(Number(line.slice(9)));
          } else if (line.startsWith('clock ')) {
            const check = checkClock(askedAt, Number(line.slice(6)), sharedNow());
            if (typeof check === 'string') reject(new Error(check));
            else {
              this.#uncertaintyMs = check;
              resolve();
            }
          }
        }
      });
      child.once('error', reject);
      child.once('exit', () => reject(new Error(`the guardian of the command ${this.#gone}`)));
    });
    this.ready.catch(() => undefined); // the caller hears of it when it awaits `ready`
    // Only the wait for `ready` keeps distlock running: afterwards it waits for its command,
    // then dismisses the guardian, which exits on its own.
    child.unref();
    unrefPipe(child.stdin);
    this.ready.finally(() => unrefPipe(child.stdout)).catch(() => undefined);
  }

  /**
   * Starts a guardian whose commands, once named, get `graceMs` between SIGTERM and SIGKILL
   * if their lease lasts that long. `undefined` on Windows, which has neither process groups
   * nor POSIX signals: a command runs unguarded there. Throws when the guardian's script is
   * missing next to the running `distlock`.
   */
  static start(graceMs: number, main = process.argv[1] ?? ''): Guardian | undefined {
    if (process.platform === 'win32') return undefined;
    // Next to dist/esm/cli/main.js, through the symlink of an installed bin. (The CommonJS
    // build compiles this file too, so it cannot use `import.meta.url`.)
    const script = join(dirname(realpathSync(main)), 'guardian-process.js');
    if (!existsSync(script)) throw new Error(`the guardian of commands is missing: ${script}`);
    // `detached`: a session of its own (setsid), out of reach of what reaches distlock's
    // group or terminal. Its stderr is distlock's, for the line it logs when it acts.
    const child = spawn(process.execPath, [...runtimeArgs(), script, String(graceMs)], {
      detached: true,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    return new Guardian(child, graceMs);
  }

  /** `onGone` hears why if the guardian ends before it is dismissed (soon if it already has). */
  whenGone(onGone: (why: string) => void): void {
    if (this.#gone === undefined) this.#onGone = onGone;
    else queueMicrotask(() => onGone(this.#gone ?? ''));
  }

  /**
   * Names the command to guard from now on, whose lease can run out at `endsAt` (shared
   * clock). Resolves true once the guardian has confirmed that it guards the command, false
   * if it ends (or was dismissed) first: the command may start (`CommandGroup.open`) only on
   * true.
   * Until then, had distlock been stopped or killed with the naming still unwritten (a runtime
   * may write to a pipe only when its event loop turns), nothing would stop the command.
   */
  #guard(command: GuardedCommand, endsAt: number): Promise<boolean> {
    this.#confirm(undefined);
    this.#write(`${command.group ? 'group' : 'process'} ${command.pid}`);
    this.tell(endsAt);
    if (this.#dismissed || this.#gone !== undefined) return Promise.resolve(false);
    return new Promise<boolean>((confirmed) => {
      this.#confirming = { pid: command.pid, confirmed };
    });
  }

  /**
   * Names `command`, started `gated`, to the guardian (`#guard`) and lets it run once
   * the guardian knows it, if `mayRun()` still says so then (not being stopped, its lease not
   * over); else shuts its gate, so that it never runs. Resolves once that is decided: the
   * guardian confirmed or ended, or the held-back command ended (a signal reached it).
   */
  async admit(
    command: CommandGroup,
    guarded: GuardedCommand,
    endsAt: number,
    mayRun: () => boolean,
  ): Promise<void> {
    const guarding = this.#guard(guarded, endsAt);
    const known = await Promise.race([guarding, command.exited.then(NO, NO)]);
    if (known && mayRun()) command.open();
    else command.shut();
  }

  /** Tells the guardian that the guarded command's lease can now run out at `endsAt`. */
  tell(endsAt: number): void {
    // Earlier by what the clocks may differ: the guardian then acts early, never late.
    this.#lease = { toldAt: sharedNow(), endsAt: endsAt - this.#uncertaintyMs };
    this.#write(`lease ${this.#lease.toldAt} ${this.#lease.endsAt}`);
  }

  /**
   * The instant (shared clock) by which the guardian SIGKILLs the guarded command, once its
   * rule (guardian-plan.ts) has it stopping the command; `undefined` before. A command whose
   * leader exits then is waited for until its group is gone, not freed with children left.
   */
  stoppingUntil(): number | undefined {
    if (this.#lease === undefined) return undefined;
    const now = sharedNow();
    const plan = stopPlan(this.#lease, this.#graceMs, {
      now,
      termSentAt: undefined,
      distlockGone: false,
    });
    return now >= plan.termAt || now >= plan.killAt ? plan.killAt : undefined;
  }

  /**
   * Tells the guardian the lease of `lock` now and after every extension, until the
   * function it returns is called. A lock that is lost keeps its last lease: the guardian
   * stops the command by then at the latest, and distlock stops it at once.
   */
  follow(lock: Lock, events: LockerEmitter): () => void {
    const tell = () => this.tell(sharedNow() + lock.remainingMs());
    const onExtended = ({ resource }: { resource: string }) => {
      if (resource === lock.resource) tell();
    };
    tell();
    events.on('extended', onExtended);
    return () => events.off('extended', onExtended);
  }

  /** Tells the guardian that the guarded command has ended: nothing to guard until the next. */
  free(): void {
    this.#lease = undefined;
    this.#write('free');
  }

  /**
   * Tells the guardian that no command needs guarding any more (or that none will run);
   * resolves once that is written (or the guardian is gone), so that distlock exiting next
   * does not look like its death.
   */
  dismiss(): Promise<void> {
    this.#child.stdout.destroy(); // distlock no longer waits for `ready`
    if (this.#dismissed || this.#gone !== undefined) return Promise.resolve();
    this.#dismissed = true;
    this.#confirm(undefined);
    return new Promise<void>((resolve) => this.#child.stdin.end('done\n', () => resolve()));
  }

  /** Settles the pending `#guard`: confirmed for `pid`, or not at all (`undefined`). */
  #confirm(pid: number | undefined): void {
    const confirming = this.#confirming;
    if (!confirming || (pid !== undefined && pid !== confirming.pid)) return;
    this.#confirming = undefined;
    confirming.confirmed(pid !== undefined);
  }

  #write(line: string): void {
    if (!this.#dismissed) this.#child.stdin.write(`${line}\n`);
  }
}

const NO = () => false;

/** How far apart two readings of the shared clock may be and still count as in order (ms). */
const CLOCK_TOLERANCE_MS = 1;

/**
 * Checks the guardian's reading `theirs` against distlock's readings before it asked and
 * after it heard: the uncertainty between the two clocks (ms) when it lies between them, or
 * why they cannot be the same clock.
 */
export function checkClock(askedAt: number, theirs: number, heardAt: number): number | string {
  if (theirs >= askedAt - CLOCK_TOLERANCE_MS && theirs <= heardAt + CLOCK_TOLERANCE_MS) {
    return heardAt - askedAt + 2 * CLOCK_TOLERANCE_MS;
  }
  return (
    `the guardian of the command reads ${theirs.toFixed(1)} ms on the clock it shares with distlock, ` +
    `which read ${askedAt.toFixed(1)} ms before asking and ${heardAt.toFixed(1)} ms after hearing: ` +
    'the two do not share a clock (was the wall clock stepped while they started?), so the ' +
    'guardian could not tell when the lease runs out'
  );
}
