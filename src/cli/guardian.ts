import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import type { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { LockerEmitter } from '../engine/events.js';
import type { Lock } from '../engine/lock.js';

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
 * distlock's side of the guardian of a running command (guardian-process.ts): a process in a
 * session of its own that stops the command, before the lease runs out, if distlock dies
 * without dismissing it. distlock names the command to it once started, and tells it the
 * lease's validity then and after every extension.
 *
 * @example
 * const guardian = Guardian.start(graceMs); // while the lock is taken
 * await guardian?.ready; // then start the command, and:
 * guardian?.guard({ pid, group: true }, lock, locker.events, (why) => stopTheCommand(why));
 * // ... once the command is done with:
 * await guardian?.dismiss();
 */
export class Guardian {
  /** Resolves once the guardian listens; rejects if it ends or cannot start before that. */
  readonly ready: Promise<void>;
  readonly #child: GuardianProcess;
  #onGone: ((why: string) => void) | undefined;
  #gone: string | undefined;
  #dismissed = false;
  #unwatch = () => {};

  private constructor(child: GuardianProcess) {
    this.#child = child;
    const gone = (why: string) => {
      this.#gone ??= why;
      if (!this.#dismissed) this.#onGone?.(why);
      this.#onGone = undefined;
    };
    child.once('error', (error) => gone(`could not start: ${error.message}`));
    child.once('exit', (code, signal) => gone(`ended (${signal ?? `exit code ${code}`})`));
    // A write to a guardian that died fails with EPIPE: its exit reports that, once.
    child.stdin.on('error', () => undefined);
    this.ready = new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
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
   * Starts a guardian whose command, once named, gets `graceMs` between SIGTERM and SIGKILL
   * if the lease lasts that long. `undefined` on Windows, which has neither process groups
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
    return new Guardian(child);
  }

  /**
   * Names the command to guard, and tells the guardian the validity of `lock` now, after
   * every extension, and when it is lost. `onGone` hears why if the guardian ends before it
   * is dismissed (at once if it already has).
   */
  guard(
    command: GuardedCommand,
    lock: Lock,
    events: LockerEmitter,
    onGone: (why: string) => void,
  ): void {
    const tell = () => {
      if (!this.#dismissed) this.#child.stdin.write(`${Math.floor(lock.remainingMs())}\n`);
    };
    const onExtended = ({ resource }: { resource: string }) => {
      if (resource === lock.resource) tell();
    };
    this.#child.stdin.write(`${command.group ? 'group' : 'process'} ${command.pid}\n`);
    tell();
    events.on('extended', onExtended);
    lock.signal.addEventListener('abort', tell, { once: true }); // lost: 0 left
    this.#unwatch = () => {
      events.off('extended', onExtended);
      lock.signal.removeEventListener('abort', tell);
    };
    if (this.#gone === undefined) this.#onGone = onGone;
    else queueMicrotask(() => onGone(this.#gone ?? ''));
  }

  /**
   * Tells the guardian that the command needs no guarding any more (or that none will run);
   * resolves once that is written (or the guardian is gone), so that distlock exiting next
   * does not look like its death.
   */
  dismiss(): Promise<void> {
    this.#unwatch();
    this.#child.stdout.destroy(); // distlock no longer waits for `ready`
    if (this.#dismissed || this.#gone !== undefined) return Promise.resolve();
    this.#dismissed = true;
    return new Promise<void>((resolve) => this.#child.stdin.end('done\n', () => resolve()));
  }
}
