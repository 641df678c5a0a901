import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { whyNotExecutable } from '../../src/cli/executable.js';

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

describe('whyNotExecutable, as execvp looks a command up', () => {
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

  it('says ENOENT for a script whose #! interpreter is missing, as exec does', () => {
    const script = file('f', 'job', 0o755);
    writeFileSync(script, `#! ${join(dir, 'no-such-interpreter')} -e\necho\n`);
    expect(whyNotExecutable(script)?.code).toBe('ENOENT');
  });

  it('says EACCES when only files that may not be executed, or directories, have that name', () => {
    const notExecutable = file('c', 'job', 0o644);
    mkdirSync(join(dir, 'd', 'job'), { recursive: true });
    expect(whyNotExecutable(notExecutable)?.code).toBe('EACCES');
    expect(whyNotExecutable('job', `${join(dir, 'c')}:${join(dir, 'e')}`)?.code).toBe('EACCES');
    expect(whyNotExecutable('job', join(dir, 'd'))?.code).toBe('EACCES');
  });
});
