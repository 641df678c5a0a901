#!/usr/bin/env node
/**
 * The `distlock` command: `run` (flock across machines), `status`, and `cron` (one run per
 * tick across a fleet). Exit codes are in exit-codes.ts and the README.
 */
import { InvalidArgumentError as BadOption, Command, CommanderError, Option } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { Locker } from '../lock/locker.js';
import { cronUnderLock } from './cron-command.js';
import { parseDuration } from './duration.js';
import { EXIT } from './exit-codes.js';
import { type NodeOptions, nodeOptions, withNodeOptions } from './node-options.js';
import { runUnderLock } from './run-command.js';
import { formatStatus, type LockState, lockStatus } from './status-command.js';

const log = (line: string) => process.stderr.write(`${line}\n`);

function duration(text: string): number {
  try {
    return parseDuration(text);
  } catch (error) {
    throw new BadOption((error as Error).message);
  }
}

/** Exit code of `distlock status` per state, like `test`: 0 when the lock is held. */
const STATUS_EXIT: Record<LockState, number> = {
  held: 0,
  free: EXIT.free,
  unknown: EXIT.unavailable,
};

/** A duration option whose default shows as written (`30s`), not in ms. */
function durationOption(flags: string, description: string, defaultMs: number, shown: string) {
  return new Option(flags, description).argParser(duration).default(defaultMs, shown);
}

async function withLocker(
  nodes: NodeOptions,
  use: (locker: Locker) => Promise<number>,
): Promise<number> {
  const locker = new Locker(nodes);
  try {
    return await use(locker);
  } finally {
    await locker.close();
  }
}

const program = new Command('distlock')
  .description('Distributed locks on Redis, from the shell.')
  .exitOverride()
  .showHelpAfterError()
  .enablePositionalOptions();

withNodeOptions(program.command('run'))
  .description('hold a lock while a command runs (like flock, across machines)')
  .requiredOption('--key <key>', 'the resource to lock')
  .addOption(
    durationOption('--ttl <duration>', 'lease, extended while the command runs', 30_000, '30s'),
  )
  .addOption(
    durationOption('--wait <duration>', 'how long to wait while the lock is busy', 10_000, '10s'),
  )
  .option('--no-wait', 'fail at once (exit 75) if the lock is busy')
  .addOption(
    durationOption('--grace <duration>', 'SIGTERM to SIGKILL once the lock is lost', 5_000, '5s'),
  )
  .option(
    '--foreground',
    "keep the command in distlock's process group and session, so that it can use the " +
      'terminal (prompts, job control); only the command itself is then signalled, not ' +
      'the processes it started',
  )
  .argument('<command>', 'the command to run')
  .argument('[args...]', 'its arguments (put them after --)')
  .addHelpText(
    'after',
    '\nThe command runs in a process group of its own (unless --foreground): when the lock is\n' +
      'lost, and on SIGINT, SIGTERM, SIGHUP or SIGQUIT, the whole group is signalled, so that\n' +
      'the processes the command started stop too.',
  )
  .passThroughOptions()
  .action(async (command: string, args: string[], opts) => {
    const waitMs = opts.wait === false ? 0 : (opts.wait as number);
    process.exitCode = await withLocker(nodeOptions(opts), (locker) =>
      runUnderLock(
        locker,
        {
          key: opts.key,
          ttlMs: opts.ttl,
          waitMs,
          graceMs: opts.grace,
          foreground: opts.foreground === true,
          command,
          args,
        },
        log,
      ),
    );
  });

withNodeOptions(program.command('status'))
  .description('show whether a lock is held, for how long, and its fence, per node')
  .argument('<key>', 'the resource')
  .option(
    '--prefix <prefix>',
    'the key prefix of the lockers that take it (their `prefix`)',
    'distlock:',
  )
  .option('--json', 'print JSON')
  .addHelpText('after', '\nExit status: 0 held, 1 free, 69 unknown (too few nodes could be read).')
  .action(async (key: string, opts) => {
    const status = await lockStatus(nodeOptions(opts), key, { prefix: opts.prefix });
    process.stdout.write(
      opts.json ? `${JSON.stringify(status)}\n` : `${formatStatus(status).join('\n')}\n`,
    );
    process.exitCode = STATUS_EXIT[status.state];
  });

withNodeOptions(program.command('cron'))
  .description(
    'run a command on every tick of a cron expression, on exactly one machine of a fleet',
  )
  .argument('<expression>', 'cron expression, e.g. "*/5 * * * *" (a 6th leading field = seconds)')
  .requiredOption('--key <key>', 'name of the job (the same on every machine)')
  .addOption(
    durationOption(
      '--at-most <duration>',
      'lockAtMostFor: longest a tick holds the lock',
      600_000,
      '10m',
    ),
  )
  .addOption(
    durationOption(
      '--at-least <duration>',
      'lockAtLeastFor: shortest a tick holds the lock',
      1_000,
      '1s',
    ),
  )
  .addOption(
    durationOption(
      '--grace <duration>',
      'SIGTERM to SIGKILL for a job being stopped (signal, or --at-most ran out)',
      5_000,
      '5s',
    ),
  )
  .argument('<command>', 'the command to run')
  .argument('[args...]', 'its arguments (after --)')
  .action(async (cron: string, command: string, args: string[], opts) => {
    const request = {
      cron,
      key: opts.key,
      lockAtMostFor: opts.atMost,
      lockAtLeastFor: opts.atLeast,
      graceMs: opts.grace,
      command,
      args,
    };
    process.exitCode = await withLocker(nodeOptions(opts), (locker) =>
      cronUnderLock(locker, request, log),
    );
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : EXIT.usage;
  } else if (error instanceof InvalidArgumentError) {
    log(`distlock: ${error.message}`);
    log(program.helpInformation());
    process.exitCode = EXIT.usage;
  } else {
    log(`distlock: ${(error as Error).message}`);
    process.exitCode = EXIT.unavailable;
  }
});
