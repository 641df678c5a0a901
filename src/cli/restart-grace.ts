import type { Command, Option } from 'commander';
import { durationOption } from './command-line.js';
import { parseDuration } from './duration.js';
import { UsageError } from './usage-errors.js';

/** The variable that gives `--restart-grace` when the option is not given. */
export const RESTART_GRACE_VARIABLE = 'DISTLOCK_RESTART_GRACE';

/**
 * Adds `--restart-grace` to a command that takes locks (`run`, `cron`): the locker's
 * `restartGraceMs`. Without it (and without the variable), a node that restarted abstains for
 * the longest lease on record on the nodes, as for any locker.
 */
export function withRestartGraceOption(command: Command): Command {
  const option: Option = durationOption(
    '--restart-grace <duration>',
    `how long a node that restarted does not vote (restartGraceMs; 0: not at all; default: $${RESTART_GRACE_VARIABLE}, else the longest lease on record on the nodes)`,
    0,
    { zero: true },
  ).default(undefined);
  return command.addOption(option);
}

/**
 * The `restartGraceMs` the command line gives: `--restart-grace`, else the variable, else
 * `undefined` (the lease records decide). A bad value of the variable is a usage error naming
 * it, before any I/O.
 */
export function restartGrace(opts: { restartGrace?: number }): number | undefined {
  if (opts.restartGrace !== undefined) return opts.restartGrace;
  const text = process.env[RESTART_GRACE_VARIABLE];
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return parseDuration(text, { zero: true });
  } catch (error) {
    throw new UsageError(`$${RESTART_GRACE_VARIABLE}: ${(error as Error).message}`);
  }
}
