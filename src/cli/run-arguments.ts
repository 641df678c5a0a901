import { UsageError } from './usage-errors.js';

/** What `distlock run` runs, and under which key. */
export interface RunTarget {
  readonly key: string;
  readonly command: string;
  readonly args: readonly string[];
}

/** The shell that `-c` runs its command with: always /bin/sh, unlike flock, which uses `$SHELL`. */
export const SHELL = '/bin/sh';

/**
 * Reads flock's forms from the arguments that follow the options:
 * `<key> [--] <command> [args...]` and `<key> -c <shell-command>` (`-c` right after the key,
 * as in flock; before the key it is an option like the others). With `--key`, the first
 * argument is the command. `-c` runs its command through `/bin/sh -c`.
 */
export function runTarget(
  positionals: readonly string[],
  options: { readonly key?: string; readonly command?: string },
): RunTarget {
  const rest = [...positionals];
  let key = options.key;
  let shellCommand = options.command;
  if (key === undefined) {
    key = rest.shift();
    if (key === undefined) {
      throw new UsageError('missing the key: distlock run <key> <command>, or --key <key>');
    }
    const next = rest[0];
    if (next === '-c' || next === '--command') {
      if (shellCommand !== undefined) throw new UsageError('-c given twice');
      rest.shift();
      shellCommand = rest.shift();
      if (shellCommand === undefined) throw new UsageError(`${next} needs a shell command`);
    } else if (next === '--') {
      rest.shift(); // commander leaves the `--` that follows an argument
    } else if (next?.startsWith('-')) {
      // Everything after the key is the command's (as with flock), so this would be run as
      // the command: almost surely an option of distlock's, written after the key.
      throw new UsageError(
        `"${next}" follows the key: put options before the key (or -- before a command whose name starts with -)`,
      );
    }
  }
  if (shellCommand !== undefined) {
    if (rest.length > 0) {
      throw new UsageError(
        `-c takes one shell command, but more arguments follow it (${rest.join(' ')}): quote them into it`,
      );
    }
    return { key, command: SHELL, args: ['-c', shellCommand] };
  }
  const [command, ...args] = rest;
  if (command === undefined) {
    throw new UsageError(
      'missing the command: distlock run <key> <command> [args...], or -c <shell-command>',
    );
  }
  return { key, command, args };
}

/**
 * `distlock cron` reads options anywhere after its expression, so the job's own options
 * (`ls -la`, `backup --redis ...`) would be taken as distlock's, and the job would run
 * without them. Its command must therefore follow `--`: throws unless `typed` (the command
 * line as given) ends with `--`, `command`, then `args`, just as commander read them.
 */
export function requireCommandAfterDashes(
  typed: readonly string[],
  command: string,
  args: readonly string[],
): void {
  const expected = ['--', command, ...args];
  const tail = typed.slice(-expected.length);
  if (tail.length !== expected.length || tail.some((word, i) => word !== expected[i])) {
    throw new UsageError(
      'put the command after --: distlock cron <expression> --key <key> [options] -- <command> [args...]',
    );
  }
}
