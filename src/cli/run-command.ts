import { AcquireTimeoutError, LockBusyError } from '../errors.js';
import type { Locker } from '../lock/locker.js';
import { CommandGroup } from './command-group.js';
import { EXIT } from './exit-codes.js';
import { STOP_SIGNALS } from './stop-signals.js';

/** What `distlock run` was asked to do. */
export interface RunRequest {
  readonly key: string;
  readonly ttlMs: number;
  /** 0 = do not wait. */
  readonly waitMs: number;
  /** How long the command gets after SIGTERM, once the lock is lost, before SIGKILL. */
  readonly graceMs: number;
  /** Keep the command in distlock's process group: only the command itself is signalled. */
  readonly foreground: boolean;
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * Holds the lock (auto-extended) while the command runs, like `flock`. The command runs in a
 * process group of its own (unless `foreground`); distlock forwards SIGINT, SIGTERM, SIGHUP
 * and SIGQUIT to that group, and stops the group (SIGTERM, then SIGKILL after the grace
 * period) if the lock is lost. Resolves the exit code: the command's own, or one of
 * {@link EXIT}.
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
    return 127;
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
