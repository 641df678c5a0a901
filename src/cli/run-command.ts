import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { AcquireTimeoutError, LockBusyError } from '../errors.js';
import type { Locker } from '../lock/locker.js';
import { EXIT } from './exit-codes.js';

/** What `distlock run` was asked to do. */
export interface RunRequest {
  readonly key: string;
  readonly ttlMs: number;
  /** 0 = do not wait. */
  readonly waitMs: number;
  /** How long the command gets after SIGTERM, once the lock is lost, before SIGKILL. */
  readonly graceMs: number;
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * Holds the lock (auto-extended) while the command runs, like `flock`: forwards SIGINT and
 * SIGTERM to it, and stops it (SIGTERM, then SIGKILL after the grace period) if the lock is
 * lost. Resolves the exit code: the command's own, or one of {@link EXIT}.
 */
export async function runUnderLock(
  locker: Locker,
  request: RunRequest,
  log: (line: string) => void,
): Promise<number> {
  const lock = await locker
    .acquire(request.key, {
      ttlMs: request.ttlMs,
      waitMs: request.waitMs,
      autoExtend: true,
      maxHoldMs: Number.POSITIVE_INFINITY,
    })
    .catch((error: unknown) => error as Error);
  if (lock instanceof Error) {
    if (lock instanceof LockBusyError || lock instanceof AcquireTimeoutError) {
      log(`distlock: "${request.key}" is locked by another holder`);
      return EXIT.busy;
    }
    log(`distlock: ${lock.message}`);
    return EXIT.unavailable;
  }

  const child = spawn(request.command, request.args, { stdio: 'inherit' });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const onInt = forward('SIGINT');
  const onTerm = forward('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let lost = false;
  let killTimer: NodeJS.Timeout | undefined;
  lock.signal.addEventListener('abort', () => {
    lost = true;
    log(`distlock: lock on "${request.key}" lost; stopping the command`);
    child.kill('SIGTERM');
    killTimer = setTimeout(() => child.kill('SIGKILL'), request.graceMs);
  });

  const code = await new Promise<number>((resolve) => {
    child.once('error', (error) => {
      log(`distlock: cannot run "${request.command}": ${error.message}`);
      resolve(127);
    });
    child.once('exit', (exitCode, signal) => {
      resolve(exitCode ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    });
  });
  clearTimeout(killTimer);
  process.off('SIGINT', onInt);
  process.off('SIGTERM', onTerm);
  await lock.release();
  return lost ? EXIT.lost : code;
}
