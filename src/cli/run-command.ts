import {
  AbortedError,
  AcquireTimeoutError,
  InvalidArgumentError,
  LockBusyError,
  NoQuorumError,
} from '../errors.js';
import type { Lock } from '../lock/lock.js';
import type { Locker } from '../lock/locker.js';
import { CommandGroup, NotStartedError } from './command-group.js';
import { EXIT } from './exit-codes.js';
import type { NodesFrom } from './node-options.js';
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
 * period) if the lock is lost. Resolves the exit code: the command's own, 126 or 127 when
 * it cannot be started (as shells do), `busyExitCode`, or one of {@link EXIT}.
 */
export async function runUnderLock(
  locker: Locker,
  request: RunRequest,
  log: (line: string) => void,
): Promise<number> {
  const lock = await acquire(locker, request);
  if (lock instanceof Error) {
    if (lock instanceof LockBusyError || lock instanceof AcquireTimeoutError) {
      log(`distlock: "${request.key}" is locked by another holder`);
      return request.busyExitCode;
    }
    log(`distlock: ${lock.message}`);
    if (lock instanceof NoQuorumError) {
      const failed = lock.nodes.flatMap((n) => {
        const problem = resultProblem(n);
        return problem ? [{ node: n.node, problem }] : [];
      });
      for (const hint of hints(failed, request.nodesFrom)) log(`distlock: ${hint}`);
    }
    return EXIT.unavailable;
  }
  if (lock.signal.aborted) {
    log(`distlock: lock on "${request.key}" lost before the command started`);
    return EXIT.lost;
  }

  const command = CommandGroup.start(request.command, request.args, {
    foreground: request.foreground,
  });
  let forwarded = false;
  const forward = (signal: NodeJS.Signals) => {
    forwarded = true;
    command.signal(signal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, forward);
  let lost = false;
  let stopping: Promise<void> | undefined;
  const onLost = () => {
    lost = true;
    log(`distlock: lock on "${request.key}" lost; stopping the command`);
    command.signal('SIGTERM');
    stopping = command.drain(request.graceMs);
  };
  lock.signal.addEventListener('abort', onLost, { once: true });

  const code = await command.exited.catch((error: Error) => {
    log(`distlock: ${error.message}`);
    return error instanceof NotStartedError ? error.exitCode : EXIT.notFound;
  });
  // What was told to stop is gone before the lock is released: the command's children get
  // the grace period, then SIGKILL. A command that simply ended may leave children running.
  await (stopping ?? (forwarded ? command.drain(request.graceMs) : undefined));
  lock.signal.removeEventListener('abort', onLost);
  for (const signal of STOP_SIGNALS) process.off(signal, forward);
  if ((await lock.release()) === 'failed') {
    log(
      `distlock: could not confirm the release of "${request.key}" on a majority; it frees itself when its TTL runs out`,
    );
  }
  return lost ? EXIT.lost : code;
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
