import { type Stats, statSync } from 'node:fs';
import { join } from 'node:path';

/** The search path that execvp uses when `PATH` is unset (glibc's `confstr(_CS_PATH)`). */
const DEFAULT_PATH = '/bin:/usr/bin';

/** Execute permission for the owner, the group or others. */
const EXECUTE_BITS = 0o111;

/**
 * Why `command` could not be started, looked up as execvp looks it up (a name without a
 * slash on each directory of `path`, where an empty entry is the working directory): ENOENT
 * when nothing of that name exists, EACCES when only files that may not be executed (or
 * directories) do; `undefined` when an executable file is found, or when a look-up fails in
 * a way that only `exec` can judge. Failures that only `exec` finds (a `#!` interpreter that
 * is missing, a file of an unknown format) are left to it.
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
    if (stat.isFile() && (stat.mode & EXECUTE_BITS) !== 0) return undefined;
    code = 'EACCES';
  }
  return notExecutable(code, command);
}

function notExecutable(code: string, command: string): NodeJS.ErrnoException {
  const why = code === 'EACCES' ? 'permission denied' : 'no such file or directory';
  return Object.assign(new Error(`${code}: ${why}, ${command}`), { code });
}
