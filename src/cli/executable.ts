import { closeSync, existsSync, openSync, readSync, type Stats, statSync } from 'node:fs';
import { join } from 'node:path';

/** The search path that execvp uses when `PATH` is unset (glibc's `confstr(_CS_PATH)`). */
const DEFAULT_PATH = '/bin:/usr/bin';

/** Execute permission for the owner, the group or others. */
const EXECUTE_BITS = 0o111;

/**
 * Why `command` could not be started, looked up as execvp looks it up (a name without a
 * slash on each directory of `path`, where an empty entry is the working directory): ENOENT
 * when nothing of that name exists, EACCES when only files that may not be executed (or
 * directories) do, or when the file found is a script whose `#!` interpreter is missing (as
 * exec says); `undefined` when an executable file is found, or when a look-up fails in a way
 * that only `exec` can judge. What only `exec` finds (a file of an unknown format) is left to it.
 */
export function whyNotExecutable(
  command: string,
  path = process.env.PATH ?? DEFAULT_PATH,
): NodeJS.ErrnoException | undefined {
  if (command === '') return notExecutable('ENOENT', command);
  const candidates = command.includes('/')
    ? [command]
    : path.split(':').map((directory) => join(directory || '.', command));
  let code = 'ENOENT';
  for (const file of candidates) {
    // By its mode bits, not access(2), which Deno grants only with --allow-sys. A file that
    // only another user may execute passes here and fails in exec: 126, as in a shell.
    let stat: Stats | undefined;
    try {
      stat = statSync(file, { throwIfNoEntry: false });
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code;
      if (why === 'EACCES') code = why;
      else if (why !== 'ENOTDIR' && why !== 'ELOOP') return undefined; // exec will tell
      continue;
    }
    if (stat === undefined) continue;
    if (stat.isFile() && (stat.mode & EXECUTE_BITS) !== 0) {
      // exec fails with ENOENT for a script whose `#!` interpreter is missing, too.
      return interpreterMissing(file) ? notExecutable('ENOENT', command) : undefined;
    }
    code = 'EACCES';
  }
  return notExecutable(code, command);
}

/** Whether `file` starts with a `#!` line naming an interpreter that does not exist. */
function interpreterMissing(file: string): boolean {
  const head = Buffer.alloc(256);
  let length: number;
  try {
    const fd = openSync(file, 'r');
    try {
      length = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false; // unreadable: exec will tell
  }
  const line = head.toString('latin1', 0, length);
  const interpreter = /^#![ \t]*([^ \t\n]+)/.exec(line)?.[1];
  return interpreter !== undefined && !existsSync(interpreter);
}

function notExecutable(code: string, command: string): NodeJS.ErrnoException {
  const why = code === 'EACCES' ? 'permission denied' : 'no such file or directory';
  return Object.assign(new Error(`${code}: ${why}, ${command}`), { code });
}
