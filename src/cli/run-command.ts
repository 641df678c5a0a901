import type { Lock } from '../engine/lock.js';
import {
  AbortedError,
  AcquireTimeoutError,
  InvalidArgumentError,
  LockBusyError,
  NoQuorumError,
} from '../errors.js';
import type { Locker } from '../locker.js';
import { CommandGroup, NotStartedError } from './command-group.js';
import { EXIT } from './exit-codes.js';
import { Guardian } from './guardian.js';
import type { NodesFrom } from './node-options.js';
import { sharedNow } from './shared-clock.js';
import { STOP_SIGNALS } from './stop-signals.js';
import { giveUpWhenDown, hints, resultProblem } from './unreachable.js';

/** What `distlock run` was asked to do. */
export interface RunRequest {
  readonly key: string;
  readonly ttlMs: number;
  /** 0 = do not wait. */
  readonly waitMs: number;
  /** The exit code when the lock is busy (`-E`, like flock's). */
  readonly busyExitCode: number;
  /** How long the command gets after SIGTERM, once the lock is lost, before SIGKILL. */
  readonly graceMs: number;
  /** Keep the command in distlock's process group: only the command itself is signalled. */
  readonly foreground: boolean;
  readonly command: string;
  readonly args: readonly string[];
  /** Where the nodes came from, for the hint when they cannot be reached. */
  readonly nodesFrom: NodesFrom;
}

/**
 * Holds the lock (auto-extended) while the command runs, like `flock`. The command runs in a
 * process group of its own (unless `foreground`); distlock forwards SIGINT, SIGTERM, SIGHUP
 * and SIGQUIT to that group, and stops the group (SIGTERM, then SIGKILL after the grace
 * period, or sooner: the guardian's SIGKILL comes before the lease can run out) if the lock
 * is lost. A {@link Guardian}, which knows of the command before it starts, stops the group
 * before the lease can run out whenever distlock does not extend it in time (killed,
 * stopped, starved); should the guardian end first, distlock stops the group. Resolves the
 * exit code: the command's own, 126 or 127 when it cannot be started (as shells do),
 * `busyExitCode`, or one of {@link EXIT}.
 */
export async function runUnderLock(
  locker: Locker,
  request: RunRequest,
  log: (line: string) => void,
): Promise<number> {
  // Started first, so that it starts up while the lock is taken.
  const guardian = Guardian.start(request.graceMs);
  const lock = await acquire(locker, request).catch(async (error: unknown) => {
    await guardian?.dismiss(); // a usage error: no command will run
    throw error;
  });
  if (lock instanceof Error) {
    await guardian?.dismiss();
    return notAcquired(lock, request, log);
  }
  const unguarded = await guardian?.ready.catch((error: Error) => error);
  if (unguarded) {
    log(`distlock: ${unguarded.message}; the command was not run`);
    await release(lock, request, log);
    return EXIT.unavailable;
  }
  if (lock.signal.aborted) {
    await guardian?.dismiss();
    log(`distlock: lock on "${request.key}" lost before the command started`);
    return EXIT.lost;
  }

  // Listening before the command starts: once it runs (and may be seen running), a signal
  // that came before the handlers would end distlock by its default action, leaving the
  // command to the guardian. The handlers run only after this code, once `command` is set.
  let forwarded = false;
  const forward = (signal: NodeJS.Signals) => {
    forwarded = true;
    command.signal(signal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, forward);
  const command = CommandGroup.start(request.command, request.args, {
    foreground: request.foreground,
    gated: guardian !== undefined,
  });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    command.signal('SIGTERM');
    stopping ??= command.drain(request.graceMs);
  };
  let lost = false;
  const onLost = () => {
    lost = true;
    log(`distlock: lock on "${request.key}" lost; stopping the command`);
    stop();
  };
  lock.signal.addEventListener('abort', onLost, { once: true });
  let unfollow = () => {};
  if (command.pid !== undefined && guardian) {
    const guarded = { pid: command.pid, group: !request.foreground };
    guardian.whenGone((why) => {
      log(
        `distlock: the guardian of the command ${why}; stopping the command: were distlock killed now, nothing would stop it before the lease runs out`,
      );
      stop();
    });
    const mayRun = () => stopping === undefined && !lock.signal.aborted && lock.remainingMs() > 0;
    const admitted = guardian.admit(command, guarded, sharedNow() + lock.remainingMs(), mayRun);
    unfollow = guardian.follow(lock, locker.events);
    await admitted;
  }

  const code = await command.exited.catch((error: Error) => {
    log(`distlock: ${error.message}`);
    return error instanceof NotStartedError ? error.exitCode : EXIT.notFound;
  });
  // Read now, the signal reports a lease that ran out while distlock did not run (stopped,
  // starved) as lost, even if the command's exit was heard first.
  if (lock.signal.aborted && !lost) onLost();
  // A command that its guardian is stopping is waited for until its whole group is gone.
  const killAt = guardian?.stoppingUntil();
  if (killAt !== undefined) stopping ??= command.drain(Math.max(0, killAt - sharedNow()));
  // What was told to stop is gone before the lock is released: the command's children get
  // the grace period, then SIGKILL. A command that simply ended may leave children running.
  await (stopping ?? (forwarded ? command.drain(request.graceMs) : undefined));
  unfollow();
  await guardian?.dismiss();
  lock.signal.removeEventListener('abort', onLost);
  for (const signal of STOP_SIGNALS) process.off(signal, forward);
  await release(lock, request, log);
  return lost ? EXIT.lost : code;
}

/** Releases the lock, saying when it could not (a node refused: the error names why). */
async function release(lock: Lock, request: RunRequest, log: (line: string) => void) {
  const released = await lock.release().catch((error: Error) => error);
  if (released instanceof Error) log(`distlock: ${released.message}`);
  else if (released === 'failed') {
    log(
      `distlock: could not confirm the release of "${request.key}" on a majority; it frees itself when its TTL runs out`,
    );
  }
}

/** Says why there is no lock, and resolves the exit code for that. */
function notAcquired(error: Error, request: RunRequest, log: (line: string) => void): number {
  if (error instanceof LockBusyError || error instanceof AcquireTimeoutError) {
    log(`distlock: "${request.key}" is locked by another holder`);
    return request.busyExitCode;
  }
  log(`distlock: ${error.message}`);
  if (error instanceof NoQuorumError) {
    const failed = error.nodes.flatMap((n) => {
      const problem = resultProblem(n);
      return problem ? [{ node: n.node, problem }] : [];
    });
    for (const hint of hints(failed, request.nodesFrom)) log(`distlock: ${hint}`);
  }
  return EXIT.unavailable;
}

/**
 * The lock, or why there is none. Gives up before `waitMs` runs out when a majority of the
 * nodes is down (connection refused...): the rejection is then that `NoQuorumError`.
 */
async function acquire(locker: Locker, request: RunRequest): Promise<Lock | Error> {
  const giveUp = giveUpWhenDown(locker, request.key);
  try {
    return await locker.acquire(request.key, {
      ttlMs: request.ttlMs,
      waitMs: request.waitMs,
      autoExtend: true,
      maxHoldMs: Number.POSITIVE_INFINITY,
      signal: giveUp.signal,
    });
  } catch (error) {
    if (error instanceof AbortedError && error.cause instanceof NoQuorumError) return error.cause;
    if (error instanceof InvalidArgumentError) throw error; // a usage error, not an outcome
    return error as Error;
  } finally {
    giveUp.dispose();
  }
}
