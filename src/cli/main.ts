#!/usr/bin/env node
/**
 * The `distlock` command: `run` (flock across machines), `status`, `break` (an operator's
 * forced release), and `cron` (one run per tick across a fleet). Exit codes are in exit-codes.ts and docs/cli.md.
 */
import { Command, CommanderError, Option } from 'commander';
import { lockerSettings, validateResource, validateTtl } from '../config/options.js';
import { tickResource } from '../schedule/schedule.js';
import { BREAK_EXIT, breakLock, formatBreak, plannedBreak } from './break-command.js';
import { act, durationOption, exitCode, withLocker } from './command-line.js';
import { cronUnderLock } from './cron-command.js';
import { DURATION_FORMS, formatDuration } from './duration.js';
import { EXIT } from './exit-codes.js';
import { formatListing, listedJson, listLocks } from './list-command.js';
import { type NodeOptions, withNodeOptions } from './node-options.js';
import { commandOwner } from './owner-label.js';
import { restartGrace, withRestartGraceOption } from './restart-grace.js';
import { requireCommandAfterDashes, runTarget } from './run-arguments.js';
import { runUnderLock } from './run-command.js';
import {
  formatStatus,
  type LockState,
  type LockStatus,
  lockStatus,
  STATUS_TIMEOUT_MS,
} from './status-command.js';
import { hints, unreadNodes } from './unreachable.js';
import { UsageError } from './usage-errors.js';
import { packageVersion } from './version.js';

const log = (line: string) => process.stderr.write(`${line}\n`);

/** Exit code of `distlock status` per state, like `test`: 0 when the lock is held. */
const STATUS_EXIT: Record<LockState, number> = {
  held: 0,
  free: EXIT.free,
  unknown: EXIT.unavailable,
};

const program = new Command('distlock')
  .description('Distributed locks on Redis, from the shell.')
  .version(packageVersion(), '-V, --version', 'print the version')
  .exitOverride()
  .showHelpAfterError()
  .enablePositionalOptions()
  .addHelpText('after', `\nDurations: ${DURATION_FORMS}.`);

const run = program
  .command('run')
  .description('hold a lock while a command runs (like flock, across machines)')
  .usage(
    '[options] <key> [--] <command> [args...]\n       distlock run [options] <key> -c <shell-command>',
  )
  .argument('[key]', 'the resource to lock (or give --key; options go before it)')
  .argument('[command]', 'the command to run')
  .argument('[args...]', 'its arguments')
  .option('--key <key>', 'the resource to lock; the first argument is then the command')
  .option('-c, --command <shell-command>', 'run <shell-command> with /bin/sh -c')
  .addOption(durationOption('--ttl <duration>', 'lease, extended while the command runs', 30_000))
  .addOption(
    durationOption(
      '-w, --wait <duration>',
      'how long to wait while the lock is busy (0: not at all)',
      10_000,
      { zero: true },
    ),
  )
  .option('--no-wait', 'do not wait if the lock is busy (the same as --wait 0)')
  .addOption(new Option('-n, --nonblock', 'the same as --no-wait (flock -n)').conflicts('wait'))
  .addOption(
    new Option('-E, --conflict-exit-code <code>', 'exit code when the lock is busy (0-255)')
      .argParser(exitCode)
      .default(EXIT.busy),
  )
  .addOption(
    durationOption(
      '--grace <duration>',
      'SIGTERM to SIGKILL when the command must stop (the lock lost, a signal); cut short so that the group is gone before the lease ends',
      5_000,
    ),
  )
  .option(
    '--foreground',
    "keep the command in distlock's process group and session, so that it can use the " +
      'terminal (prompts, job control); only the command itself is then signalled, not ' +
      'the processes it started',
  )
  .addHelpText(
    'after',
    `\nDurations: ${DURATION_FORMS}.\n` +
      '\nThe command runs in a process group of its own (unless --foreground): when the lock is\n' +
      'lost, and on SIGINT, SIGTERM, SIGHUP or SIGQUIT, the whole group is signalled, so that\n' +
      'the processes the command started stop too. If distlock itself is killed, a guardian\n' +
      'process stops the group (the command alone with --foreground) before the lease runs out.\n' +
      "\nExit status: the command's own; 126 or 127 if it cannot be run; 75 (or -E) busy;\n" +
      '69 Redis unreachable (no quorum); 76 the lock was lost; 2 bad arguments.',
  )
  .passThroughOptions();
withNodeOptions(withRestartGraceOption(run)).action(
  (key: string | undefined, command: string | undefined, args: string[], opts, self: Command) =>
    act(
      self,
      {
        resource: {
          name: opts.key === undefined ? '<key>' : '--key',
          given: JSON.stringify(opts.key ?? key),
        },
        ttlMs: { name: '--ttl', given: formatDuration(opts.ttl) },
      },
      (nodes) => {
        const positionals = [key, command, ...args].filter((a) => a !== undefined);
        const target = runTarget(positionals, opts);
        const waitMs = opts.nonblock === true || opts.wait === false ? 0 : (opts.wait as number);
        const restartGraceMs = restartGrace(opts);
        return withLocker(
          nodes,
          (locker) =>
            runUnderLock(
              locker,
              {
                ...target,
                ttlMs: opts.ttl,
                waitMs,
                busyExitCode: opts.conflictExitCode,
                graceMs: opts.grace,
                foreground: opts.foreground === true,
                nodesFrom: nodes.from,
              },
              log,
            ),
          { restartGraceMs, owner: commandOwner(target.command, target.args) },
        );
      },
    ),
);

const status = program
  .command('status')
  .description('show whether a lock is held, for how long, and its fence, per node')
  .argument('<key>', 'the resource (with --cron: the name of the cron job)')
  .option(
    '--cron',
    'show the lock of the cron job named <key> (distlock cron --key <key>), held while a tick runs',
  )
  .option(
    '--prefix <prefix>',
    'the key prefix of the lockers that take it (their `prefix`)',
    'distlock:',
  )
  .option('--json', 'print JSON')
  .addHelpText('after', '\nExit status: 0 held, 1 free, 69 unknown (too few nodes could be read).');
onLock(status, async (nodes, resource, opts) => {
  const found = await showStatus(nodes, resource, opts);
  return STATUS_EXIT[found.state];
});

/** Options of a command about one lock (`status`, `break`). */
interface LockCommandOptions {
  readonly prefix: string;
  readonly cron?: boolean;
  readonly json?: boolean;
  readonly yes?: boolean;
}

/**
 * Sets the action of a command about the lock of `<key>` (with `--cron`, of the running tick
 * of the cron job named `<key>`): `run` gets the nodes and the resource, once both are valid.
 */
function onLock(
  command: Command,
  run: (nodes: NodeOptions, resource: string, opts: LockCommandOptions) => Promise<number>,
): void {
  withNodeOptions(command).action((key: string, opts: LockCommandOptions, self: Command) =>
    act(
      self,
      {
        key: { name: '<key>', given: JSON.stringify(key) },
        prefix: { name: '--prefix', given: JSON.stringify(opts.prefix) },
      },
      async (nodes) => {
        validateResource(key, 'key');
        return run(nodes, opts.cron === true ? tickResource(key) : key, opts);
      },
    ),
  );
}

/** Reads the lock on `resource`, prints it (as JSON with `--json`) and hints about unread nodes. */
async function showStatus(
  nodes: NodeOptions,
  resource: string,
  opts: { prefix: string; json?: boolean; cron?: boolean },
): Promise<LockStatus> {
  const found = await lockStatus(nodes, resource, { prefix: opts.prefix });
  const lines = formatStatus(found, { cron: opts.cron === true });
  process.stdout.write(opts.json ? `${JSON.stringify(found)}\n` : `${lines.join('\n')}\n`);
  for (const hint of hints(unreadNodes(found.nodes), nodes.from)) log(`distlock: ${hint}`);
  return found;
}

const ls = program
  .command('ls')
  .description(
    'list what is held or waited for: locks, cron and schedule() ticks, semaphores, read-write locks, elections',
  )
  .argument('[pattern]', 'the names to list, a glob as Redis MATCH reads one (report:*)')
  .option(
    '--prefix <prefix>',
    'the key prefix of the lockers that take them (their `prefix`)',
    'distlock:',
  )
  .option('--json', 'print JSON, one object per resource and line')
  .addOption(
    durationOption(
      '--watch [interval]',
      'list again every interval, in place (a terminal)',
      0,
    ).default(0, 'off; 2s when given alone'),
  )
  .addHelpText(
    'after',
    '\nCost: SCAN (COUNT 1000) on every node (every master of a Cluster), then, for each resource found, one read per node (two for read-write locks and elections).' +
      '\nExit status: 0 listed, 69 fewer than a majority of the nodes could be scanned.',
  );
withNodeOptions(ls).action((pattern: string | undefined, opts: ListCommandOptions, self: Command) =>
  act(
    self,
    {
      match: { name: '[pattern]', given: JSON.stringify(pattern) },
      prefix: { name: '--prefix', given: JSON.stringify(opts.prefix) },
    },
    async (nodes) => {
      const match = pattern === undefined ? {} : { match: pattern };
      const everyMs = opts.watch === true ? WATCH_MS : opts.watch;
      if (everyMs === 0) {
        const found = await listLocks(nodes, { prefix: opts.prefix, ...match });
        const text = opts.json
          ? found.map((r) => JSON.stringify(listedJson(r)))
          : formatListing(found);
        process.stdout.write(text.length > 0 ? `${text.join('\n')}\n` : '');
        return 0;
      }
      if (!process.stdout.isTTY || opts.json) {
        throw new UsageError('--watch redraws one screen: run it on a terminal, without --json');
      }
      for (;;) {
        const found = await listLocks(nodes, { prefix: opts.prefix, ...match });
        const rows = Math.max(3, (process.stdout.rows ?? 24) - 1);
        const heading = `every ${formatDuration(everyMs)}, ${new Date().toISOString()}`;
        const screen = [heading, ...formatListing(found, rows - 1)].join('\n');
        process.stdout.write(`\x1b[H\x1b[2J${screen}\n`);
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    },
  ),
);

/** Options of `distlock ls`. */
interface ListCommandOptions {
  readonly prefix: string;
  readonly json?: boolean;
  /** Redraw every this many ms (`true`: every {@link WATCH_MS}); 0: list once. */
  readonly watch: number | true;
}

/** How often `ls --watch` lists again when not told. */
const WATCH_MS = 2_000;

const breakCommand = program
  .command('break')
  .description(
    'delete a lock whoever holds it (a stuck holder), handing it to the first waiter; ' +
      'without --yes, only say what it would do',
  )
  .argument('<key>', 'the resource (with --cron: the name of the cron job)')
  .option('--yes', 'do it (without it, distlock shows the lock and what it would do)')
  .option('--cron', 'break the lock of the running tick of the cron job named <key>')
  .option(
    '--prefix <prefix>',
    'the key prefix of the lockers that take it (their `prefix`)',
    'distlock:',
  )
  .option('--json', 'print JSON')
  .addHelpText(
    'after',
    '\nThe holder is not stopped: it learns that the lock is gone at its next extension (a\n' +
      '`distlock run` holder then stops its command), so until then it may still act.\n' +
      '\nExit status: 0 broken, 1 nothing to break (not held), 69 too few nodes answered,\n' +
      '2 bad arguments or no --yes (nothing was done; 69 if the lock could not be read).',
  );
onLock(breakCommand, async (nodes, resource, opts) => {
  if (opts.yes !== true) {
    const found = await showStatus(nodes, resource, opts);
    log(`distlock: ${plannedBreak(found)}. Nothing done: add --yes to break it.`);
    return found.state === 'unknown' ? EXIT.unavailable : EXIT.usage;
  }
  const report = await withLocker(
    nodes,
    (locker) => breakLock(locker, resource, STATUS_TIMEOUT_MS),
    { prefix: opts.prefix },
  );
  process.stdout.write(
    opts.json ? `${JSON.stringify(report)}\n` : `${formatBreak(report).join('\n')}\n`,
  );
  for (const hint of hints(unreadNodes(report.nodes), nodes.from)) log(`distlock: ${hint}`);
  return BREAK_EXIT[report.result];
});

const cron = program
  .command('cron')
  .description(
    'run a command on every tick of a cron expression, on exactly one machine of a fleet',
  )
  .usage('[options] <expression> -- <command> [args...]')
  .argument('<expression>', 'cron expression, e.g. "*/5 * * * *" (a 6th leading field = seconds)')
  .requiredOption('--key <key>', 'name of the job (the same on every machine)')
  .addOption(
    durationOption('--at-most <duration>', 'lockAtMostFor: longest a tick holds the lock', 600_000),
  )
  .addOption(
    durationOption(
      '--at-least <duration>',
      'lockAtLeastFor: shortest a tick holds the lock (0: released when the job ends)',
      1_000,
      { zero: true },
    ),
  )
  .addOption(
    durationOption(
      '--grace <duration>',
      'SIGTERM to SIGKILL for a job being stopped (signal, or --at-most ran out)',
      5_000,
    ),
  )
  .argument('<command>', 'the command to run, after --')
  .argument('[args...]', 'its arguments')
  .addHelpText(
    'after',
    `\nDurations: ${DURATION_FORMS}.\n` +
      '\nThe command goes after -- (even without arguments): distlock reads options anywhere\n' +
      "before it, so that without -- the command's own options would be taken as distlock's.\n" +
      '\nWhile a tick runs, `distlock status --cron <key>` shows its lock as held.',
  )
  .configureOutput({
    // An unknown option before -- is most likely the command's (`ls -la`).
    outputError: (message, write) =>
      write(
        message.replace(
          /^(error: unknown option '.*')$/m,
          "$1 (if it is the command's, put the command after --)",
        ),
      ),
  });
withNodeOptions(withRestartGraceOption(cron)).action(
  (expression: string, command: string, args: string[], opts, self: Command) =>
    act(
      self,
      {
        resource: { name: '--key', given: JSON.stringify(opts.key) },
        cron: { name: '<expression>', given: JSON.stringify(expression) },
        lockAtMostFor: { name: '--at-most', given: formatDuration(opts.atMost) },
        lockAtLeastFor: { name: '--at-least', given: formatDuration(opts.atLeast) },
      },
      (nodes) => {
        requireCommandAfterDashes(process.argv.slice(2), command, args);
        // Each tick locks for --at-most: a lease too short to take fails every tick, later.
        validateTtl('lockAtMostFor', opts.atMost, lockerSettings({ nodes: nodes.nodes }));
        const request = {
          cron: expression,
          key: opts.key,
          lockAtMostFor: opts.atMost,
          lockAtLeastFor: opts.atLeast,
          graceMs: opts.grace,
          command,
          args,
        };
        return withLocker(nodes, (locker) => cronUnderLock(locker, request, log), {
          restartGraceMs: restartGrace(opts),
          owner: commandOwner(command, args),
        });
      },
    ),
);

program.parseAsync(process.argv).catch((error: unknown) => {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : EXIT.usage;
  } else {
    log(`distlock: ${(error as Error).message}`);
    process.exitCode = EXIT.unavailable;
  }
});
