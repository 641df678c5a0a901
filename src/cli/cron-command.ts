import { spawn } from 'node:child_process';
import type { Locker } from '../lock/locker.js';
import { schedule } from '../schedule/schedule.js';

/** What `distlock cron` was asked to do. */
export interface CronRequest {
  readonly cron: string;
  readonly key: string;
  readonly lockAtMostFor: number;
  readonly lockAtLeastFor: number;
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * Runs the command on every tick of the cron expression, on exactly one of the machines that
 * run the same `distlock cron` with the same key. Runs until SIGINT or SIGTERM.
 */
export async function cronUnderLock(
  locker: Locker,
  request: CronRequest,
  log: (line: string) => void,
): Promise<number> {
  const job = schedule(
    locker,
    request.key,
    request.cron,
    {
      lockAtMostFor: request.lockAtMostFor,
      lockAtLeastFor: request.lockAtLeastFor,
      onTick: (outcome, at, error) => {
        if (outcome === 'failed')
          log(`distlock: tick ${at.toISOString()} failed: ${String(error)}`);
      },
    },
    ({ signal }) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(request.command, request.args, { stdio: 'inherit' });
        const stop = () => child.kill('SIGTERM'); // the tick's lock ran out: lockAtMostFor
        signal.addEventListener('abort', stop);
        child.once('error', reject);
        child.once('exit', (code) => {
          signal.removeEventListener('abort', stop);
          if (code === 0) resolve();
          else reject(new Error(`"${request.command}" exited with ${code}`));
        });
      }),
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await job.stop();
  return 0;
}
