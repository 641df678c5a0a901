import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** The README's examples are files under examples/; each must run as written. */
describe('README examples', () => {
  it('quickstart.mjs runs and prints what the README says', () => {
    const output = execFileSync(process.execPath, ['examples/quickstart.mjs'], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(output).toMatch(/^holding invoice:42 for 9\d{3} ms$/m);
    expect(output).toContain('second try while held: null');
    expect(output).toContain('release: released');
    expect(output).toContain('release again: not-held');
    expect(output).toContain('after release: invoice:42');
  });

  it('fencing.mjs refuses the write of a holder that stalled past its lease', () => {
    const output = execFileSync(process.execPath, ['examples/fencing.mjs'], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(output.split('\n').filter(Boolean)).toEqual([
      'slow holder: fence 1n read null',
      'next holder: fence 2n',
      'next holder writes: applied',
      'slow holder writes: stale',
      'stored: 120',
    ]);
  });

  it('lifecycle.mjs shows auto-extension, events and a loud loss', () => {
    const output = execFileSync(process.execPath, ['examples/lifecycle.mjs'], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(output.split('\n').filter(Boolean)).toEqual([
      'acquired report after 1 attempt(s)',
      'report done',
      'acquired invoice:42 after 1 attempt(s)',
      'lost invoice:42 - LOCK_LOST',
      'signal reason: LockLostError',
    ]);
  });
});
