import { closeSync, existsSync, openSync, readSync, type Stats, statSync } from 'node:fs';
import { join } from 'node:path';

/** The search path that execvp uses when `PATH` is unset (glibc's `confstr(_CS_PATH)`). */
const DEFAULT_PATH = '/bin:/usr/bin';

/** Execute permission for the owner, the group or others. */
const EXECUTE_BITS = 0o111;

/** Where a command was found, or why it cannot be started (see {@link lookUp}). */
export type LookedUp = { readonly file: string } | { readonly error: NodeJS.ErrnoException };

/**
 * `command` looked up as execvp looks it up: a name without a slash on each directory of
 * `path` (an empty entry is the working directory), skipping what exec would skip (files
 * that may not be executed, directories, scripts whose `#!` interpreter is missing). Gives
 * the file found, or the error execvp would give: EACCES when only files that may not be
 * executed (or directories) have that name, else ENOENT. A look-up that fails in a way only
 * `exec` can judge (a permission the runtime does not grant) gives `command` itself, as do
 * files of an unknown format: exec tells then.
 */
export function lookUp(command: string, path = process.env.PATH ?? DEFAULT_PATH): LookedUp {
  if (command === '') return { error: notExecutable('ENOENT', command) };
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
      else if (why !== 'ENOTDIR' && why !== 'ELOOP') return { file: command }; // exec tells
      continue;
    }
    if (stat === undefined) continue;
    if (!stat.isFile() || (stat.mode & EXECUTE_BITS) === 0) {
      code = 'EACCES';
      continue;
    }
    // exec fails with ENOENT for a script whose interpreter is missing, and execvp goes on.
    if (!interpreterMissing(file)) return { file };
  }
  return { error: notExecutable(code, command) };
}

/**
 * Whether `file` starts with a `#!` line naming an interpreter that does not exist. A line
 * longer than the kernel reads (256 bytes), or a file that cannot be read, is left to exec.
 */
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
    return false;
  }
  const interpreter = /^#![ \t]*([^ \t\n]+)[^\n]*\n/.exec(head.toString('latin1', 0, length))?.[1];
  if (interpreter === undefined) return false;
  try {
    return !existsSync(interpreter);
  } catch {
    return false; // Deno without read access there: exec tells
  }
}

function notExecutable(code: string, command: string): NodeJS.ErrnoException {
  const why = code === 'EACCES' ? 'permission denied' : 'no such file or directory';
  return Object.assign(new Error(`${code}: ${why}, ${command}`), { code });
}
