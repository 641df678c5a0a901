import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import { lookUp } from './executable.js';
import { EXIT } from './exit-codes.js';
import { groupRunning } from './process-group.js';

/** How often a group that was told to stop is checked for members still running. */
const POLL_MS = 50;

/** Options of {@link CommandGroup.start}. */
export interface CommandGroupOptions {
  /**
   * Keep the command in distlock's own process group and session, so that it can use the
   * terminal; signals then reach the command only, not its children. @default false
   */
  readonly foreground?: boolean;
  /**
   * Hold the command back until {@link CommandGroup.open} is called: its process (and group)
   * exists, with the pid that will be the command's, but the command has not started. A
   * command found not to be executable is then not started at all. @default false
   */
  readonly gated?: boolean;
}

/**
 * The gate in front of a held-back command: `/bin/sh` waits for a line on fd 3, then becomes
 * the command (`exec`, same pid), without fd 3 and without the variable it read into. It
 * never runs the command if fd 3 ends first.
 */
const GATE = 'read -r distlock_gate <&3 && unset distlock_gate && exec "$0" "$@" 3<&-';

/** The shell that holds a gated command back. */
const GATE_SHELL = '/bin/sh';

/**
 * A command that distlock runs with inherited stdio. Unless `foreground`, the command leads
 * a process group (and session) of its own, and every signal goes to the whole group, so
 * that what the command started stops with it.
 */
export class CommandGroup {
  /**
   * The command's exit code: its own, or 128 + the number of the signal that ended it.
   * Rejects with a {@link NotStartedError} when the command could not be started.
   */
  readonly exited: Promise<number>;
  /** None when the command was found not executable before anything was spawned. */
  readonly #child: ChildProcess | undefined;
  readonly #foreground: boolean;
  #hasExited = false;

  private constructor(
    child: ChildProcess | NodeJS.ErrnoException,
    foreground: boolean,
    command: string,
  ) {
    this.#foreground = foreground;
    if (child instanceof Error) {
      this.#child = undefined;
      this.#hasExited = true;
      this.exited = Promise.reject(new NotStartedError(command, child));
      this.exited.catch(() => undefined);
      return;
    }
    this.#child = child;
    this.exited = new Promise<number>((resolve, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => {
        this.#hasExited = true;
        reject(new NotStartedError(command, error));
      });
      child.once('exit', (code, signal) => {
        this.#hasExited = true;
        resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
      });
    });
    this.exited.catch(() => undefined); // the caller hears of it when it awaits `exited`
  }

  /** Starts `command` with `args` (held back, if `gated`, until {@link open}). */
  static start(
    command: string,
    args: readonly string[],
    options: CommandGroupOptions = {},
  ): CommandGroup {
    const foreground = options.foreground ?? false;
    // `detached` makes the child a session and group leader (setsid); distlock still waits
    // for it, since it keeps the child referenced and awaits `exited`.
    if (!options.gated) {
      const child = spawn(command, args, { stdio: 'inherit', detached: !foreground });
      return new CommandGroup(child, foreground, command);
    }
    // Looked up first, so that a command that cannot start fails as it does ungated, with
    // the same exit code and message, and without a shell's own words.
    const found = lookUp(command);
    if ('error' in found) return new CommandGroup(found.error, foreground, command);
    // A name that starts with '-' would read as an option to some shells' `exec` (bash's):
    // such a command runs by the path it was found at.
    const exec = command.startsWith('-') ? found.file : command;
    const child = spawn(GATE_SHELL, ['-c', GATE, exec, ...args], {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      detached: !foreground,
    });
    // A gate whose shell is gone (stopped before it opened) fails the write: nothing to tell.
    (child.stdio[3] as Writable | null)?.on('error', () => undefined);
    return new CommandGroup(
      child,
      foreground,
      `${GATE_SHELL} (which holds the command back until its guardian knows it)`,
    );
  }

  /** Lets a command started `gated` run; nothing otherwise. */
  open(): void {
    this.#gate()?.end('go\n');
  }

  /** Makes sure a command started `gated` never runs: its shell exits without it. */
  shut(): void {
    this.#gate()?.destroy();
  }

  #gate(): Writable | undefined {
    return (this.#child?.stdio[3] as Writable | null | undefined) ?? undefined;
  }

  /** The command's pid (the id of its process group, unless `foreground`); none if it did not start. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Sends `signal` to the command's process group (to the command alone if `foreground`). */
  signal(signal: NodeJS.Signals): void {
    const child = this.#child;
    const pid = child?.pid;
    if (!child || pid === undefined) return;
    if (this.#foreground) {
      child.kill(signal); // a no-op once the command has exited
      return;
    }
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: nothing of the group is left to signal.
    }
  }

  /**
   * Resolves once the command has exited and nothing of its group still runs. Whatever still
   * runs `graceMs` from now gets SIGKILL.
   */
  drain(graceMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let killed = false;
      let poll: NodeJS.Timeout | undefined;
      const kill = setTimeout(() => {
        killed = true;
        this.signal('SIGKILL');
      }, graceMs);
      const check = () => {
        // After SIGKILL only the command itself is awaited: nothing outlives SIGKILL, but
        // orphans that nobody reaped yet still count as members of the group.
        if (this.#hasExited && (killed || !this.#groupRunning())) {
          clearTimeout(kill);
          clearTimeout(poll);
          resolve();
        } else {
          // Not unref()ed: this wait is what keeps distlock from exiting too early.
          poll = setTimeout(check, POLL_MS);
        }
      };
      check();
    });
  }

  /** Whether a member of the command's group is still running (not a zombie). */
  #groupRunning(): boolean {
    const pid = this.#child?.pid;
    return !this.#foreground && pid !== undefined && groupRunning(pid);
  }
}

/**
 * The command could not be started. `exitCode` is what a shell exits with then: 127 when
 * the command is not found, 126 when it is found but cannot be run (not executable, a
 * directory, a `#!` interpreter that is missing).
 */
export class NotStartedError extends Error {
  readonly exitCode: number;

  constructor(command: string, error: NodeJS.ErrnoException) {
    const [exitCode, why] = notStartedBecause(command, error);
    super(`${command}: ${why}`, { cause: error });
    this.name = 'NotStartedError';
    this.exitCode = exitCode;
  }
}

function notStartedBecause(command: string, error: NodeJS.ErrnoException): [number, string] {
  if (error.code === 'ENOENT') {
    // execve says ENOENT for a script whose interpreter is missing, too.
    return command.includes('/') && existsSync(command)
      ? [EXIT.cannotRun, 'cannot execute: its interpreter (the #! line) was not found']
      : [EXIT.notFound, 'command not found'];
  }
  if (error.code === 'EACCES') return [EXIT.cannotRun, 'permission denied'];
  return [EXIT.cannotRun, `cannot execute: ${error.message}`];
}
