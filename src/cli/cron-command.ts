import { constants } from 'node:os';
import type { Locker } from '../locker.js';
import { schedule, type Tick } from '../schedule/schedule.js';
import { CommandGroup, NotStartedError } from './command-group.js';
import { STOP_SIGNALS } from './stop-signals.js';

/** What `distlock cron` was asked to do. */
export interface CronRequest {
  readonly cron: string;
  readonly key: string;
  readonly lockAtMostFor: number;
  readonly lockAtLeastFor: number;
  /** How long a job that is being stopped gets after the signal, before SIGKILL. */
  readonly graceMs: number;
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * Runs the command on every tick of the cron expression, on exactly one of the machines that
 * run the same `distlock cron` with the same key; each run is a process group of its own.
 * Runs until SIGINT, SIGTERM, SIGHUP or SIGQUIT: forwards it to the running job's group,
 * waits for the group (SIGKILL after the grace period), stops the schedule, and resolves
 * 128 + the signal's number (143 for SIGTERM, 130 for SIGINT).
 */
export async function cronUnderLock(
  locker: Locker,
  request: CronRequest,
  log: (line: string) => void,
): Promise<number> {
  let running: CommandGroup | undefined;
  let received: NodeJS.Signals | undefined;
  let onStopRequested!: () => void;
  const stopRequested = new Promise<void>((resolve) => {
    onStopRequested = resolve;
  });
  const onSignal = (signal: NodeJS.Signals) => {
    received ??= signal;
    running?.signal(signal);
    onStopRequested();
  };

  const runJob = async ({ signal: lockLost }: Tick): Promise<void> => {
    if (received !== undefined) return; // the tick was being locked when the signal came
    const command = CommandGroup.start(request.command, request.args);
    running = command;
    let stopping: Promise<void> | undefined;
    const stop = () => {
      // The tick's lock ran out (lockAtMostFor): the job must not go on unprotected.
      command.signal('SIGTERM');
      stopping = command.drain(request.graceMs);
    };
    lockLost.addEventListener('abort', stop, { once: true });
    try {
      const code = await command.exited.catch((error: unknown) => {
        // Logged as a shell would exit: 127 not found, 126 not executable.
        if (error instanceof NotStartedError)
          throw new Error(`${error.message} (exit ${error.exitCode})`);
        throw error;
      });
      await stopping;
      if (code !== 0) throw new Error(`"${request.command}" exited with ${code}`);
    } finally {
      lockLost.removeEventListener('abort', stop);
      running = undefined;
    }
  };
  const job = schedule(
    locker,
    request.key,
    request.cron,
    {
      lockAtMostFor: request.lockAtMostFor,
      lockAtLeastFor: request.lockAtLeastFor,
      onTick: (outcome, at, error) => {
        const why = error instanceof Error ? error.message : String(error);
        if (outcome === 'failed') log(`distlock: tick ${at.toISOString()} failed: ${why}`);
        // A loss noticed while the command ran stopped it (SIGTERM, SIGKILL after the grace).
        if (outcome === 'lost') log(`distlock: tick ${at.toISOString()} lost its lock: ${why}`);
      },
    },
    runJob,
  );
  // Installed until the end: a second signal is forwarded too, instead of killing distlock
  // while the job's group may still run.
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  await stopRequested;
  await Promise.all([running?.drain(request.graceMs), job.stop()]);
  for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  return 128 + (received ? (constants.signals[received] ?? 0) : 0);
}
