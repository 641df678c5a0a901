import { constants } from 'node:os';
import type { Locker } from '../locker.js';
import { schedule, type Tick, tickResource } from '../schedule/schedule.js';
import { CommandGroup, NotStartedError } from './command-group.js';
import { EXIT } from './exit-codes.js';
import { Guardian } from './guardian.js';
import { sharedNow } from './shared-clock.js';
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
 * A {@link Guardian}, told of each job and of when its tick's lock can run out, stops the
 * job's group before then (SIGTERM, then SIGKILL), whatever happens to distlock (killed,
 * stopped, starved) and also when the job runs past `--at-most`. Runs until SIGINT, SIGTERM,
 * SIGHUP or SIGQUIT: forwards it to the running job's group, waits for the group (SIGKILL
 * after the grace period) before the tick's lock is released, stops the schedule, and
 * resolves 128 + the signal's number (143 for SIGTERM, 130 for SIGINT). Resolves 69 without
 * running anything when the guardian cannot start, and stops (69) if it ends.
 */
export async function cronUnderLock(
  locker: Locker,
  request: CronRequest,
  log: (line: string) => void,
): Promise<number> {
  const guardian = Guardian.start(request.graceMs);
  const unguarded = await guardian?.ready.catch((error: Error) => error);
  if (unguarded) {
    log(`distlock: ${unguarded.message}; no job was run`);
    await guardian?.dismiss();
    return EXIT.unavailable;
  }
  let running: { stop(signal: NodeJS.Signals): void } | undefined;
  let received: NodeJS.Signals | undefined;
  let guardianGone = false;
  let onStopRequested!: () => void;
  const stopRequested = new Promise<void>((resolve) => {
    onStopRequested = resolve;
  });
  const onSignal = (signal: NodeJS.Signals) => {
    received ??= signal;
    running?.stop(signal);
    onStopRequested();
  };
  guardian?.whenGone((why) => {
    log(
      `distlock: the guardian of the jobs ${why}; stopping the running job and the schedule: were distlock killed now, nothing would stop a job before its lock runs out`,
    );
    guardianGone = true;
    running?.stop('SIGTERM');
    onStopRequested();
  });

  // When the lock of the tick about to run can run out, on the clock the guardian shares:
  // the lock is taken (and this event reported) just before its job is called.
  const resource = tickResource(request.key);
  let tickEndsAt: number | undefined;
  const onAcquired = ({
    resource: taken,
    validityMs,
  }: {
    resource: string;
    validityMs: number;
  }) => {
    if (taken === resource) tickEndsAt = sharedNow() + validityMs;
  };
  locker.events.on('acquired', onAcquired);

  const runJob = async ({ signal: lockLost }: Tick): Promise<void> => {
    const endsAt = tickEndsAt ?? sharedNow(); // unknown: treated as already over
    tickEndsAt = undefined;
    if (received !== undefined || guardianGone) return; // stopping while the tick was locked
    const command = CommandGroup.start(request.command, request.args, {
      gated: guardian !== undefined,
    });
    let stopping: Promise<void> | undefined;
    const stop = (signal: NodeJS.Signals) => {
      command.signal(signal);
      stopping ??= command.drain(request.graceMs);
    };
    running = { stop };
    // The tick's lock ran out (the guardian stops the job before that, unless it is gone).
    const onLost = () => stop('SIGTERM');
    lockLost.addEventListener('abort', onLost, { once: true });
    try {
      if (command.pid !== undefined && guardian) {
        const guarded = { pid: command.pid, group: true };
        const mayRun = () => stopping === undefined && !lockLost.aborted && sharedNow() < endsAt;
        await guardian.admit(command, guarded, endsAt, mayRun);
      }
      const code = await command.exited.catch((error: unknown) => {
        // Logged as a shell would exit: 127 not found, 126 not executable.
        if (error instanceof NotStartedError)
          throw new Error(`${error.message} (exit ${error.exitCode})`);
        throw error;
      });
      // What was told to stop (by distlock or by the guardian) is gone before the tick's
      // lock is released.
      const killAt = guardian?.stoppingUntil();
      if (killAt !== undefined) stopping ??= command.drain(Math.max(0, killAt - sharedNow()));
      await stopping;
      if (code !== 0) throw new Error(`"${request.command}" exited with ${code}`);
    } finally {
      lockLost.removeEventListener('abort', onLost);
      guardian?.free();
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
  await job.stop(); // waits for the running job, and its group when it was told to stop
  locker.events.off('acquired', onAcquired);
  await guardian?.dismiss();
  for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  if (received === undefined) return EXIT.unavailable; // the guardian ended
  return 128 + (constants.signals[received] ?? 0);
}
