import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lookUp } from '../../src/cli/executable.js';

/** The error code of looking `command` up, or the file found. */
function whyNotExecutable(command: string, path?: string) {
  const found = lookUp(command, path);
  return 'error' in found ? found.error : undefined;
}

const dir = mkdtempSync(join(tmpdir(), 'distlock-executable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file in directory `sub` of `dir`, with `mode`. */
function file(sub: string, name: string, mode: number): string {
  mkdirSync(join(dir, sub), { recursive: true });
  const path = join(dir, sub, name);
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, mode);
  return path;
}

describe('lookUp, as execvp looks a command up', () => {
  it('finds an executable file by path, or by name on PATH past a file that is not executable', () => {
    const path = file('a', 'job', 0o755);
    file('b', 'job', 0o644);
    expect(whyNotExecutable(path)).toBeUndefined();
    expect(whyNotExecutable('job', `${join(dir, 'b')}:${join(dir, 'a')}`)).toBeUndefined();
  });

  it('says ENOENT when nothing of that name exists', () => {
    expect(whyNotExecutable(join(dir, 'missing'))?.code).toBe('ENOENT');
    expect(whyNotExecutable('missing', join(dir, 'a'))?.code).toBe('ENOENT');
    expect(whyNotExecutable('')?.code).toBe('ENOENT');
  });

  it('says ENOENT for a script whose #! interpreter is missing, and on PATH looks further, as execvp does', () => {
    const script = file('f', 'tool', 0o755);
    writeFileSync(script, `#! ${join(dir, 'no-such-interpreter')} -e\necho\n`);
    const working = file('g', 'tool', 0o755);
    expect(whyNotExecutable(script)?.code).toBe('ENOENT');
    expect(whyNotExecutable('tool', join(dir, 'f'))?.code).toBe('ENOENT');
    expect(lookUp('tool', `${join(dir, 'f')}:${join(dir, 'g')}`)).toEqual({ file: working });
  });

  it('leaves a #! line longer than the kernel reads to exec', () => {
    const script = file('h', 'long', 0o755);
    writeFileSync(script, `#!/${'x'.repeat(300)}\necho\n`);
    expect(whyNotExecutable(script)).toBeUndefined();
  });

  it('says EACCES when only files that may not be executed, or directories, have that name', () => {
    const notExecutable = file('c', 'job', 0o644);
    mkdirSync(join(dir, 'd', 'job'), { recursive: true });
    expect(whyNotExecutable(notExecutable)?.code).toBe('EACCES');
    expect(whyNotExecutable('job', `${join(dir, 'c')}:${join(dir, 'e')}`)?.code).toBe('EACCES');
    expect(whyNotExecutable('job', join(dir, 'd'))?.code).toBe('EACCES');
  });
});
