import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { commandOwner } from '../../src/cli/owner-label.js';
import { MAX_OWNER_LENGTH, validateOwner } from '../../src/config/options.js';
import { acquisitionToken, labelOf } from '../../src/engine/token.js';

describe('owner labels', () => {
  it('label a command with this host and pid, cut to the longest label, one line', () => {
    const owner = commandOwner('./backup.sh', ['--full', 'a\nb']);
    expect(owner).toBe(`${hostname()}:${process.pid} ./backup.sh --full a b`);
    const long = commandOwner('cmd', ['😀'.repeat(80)]);
    expect(long.length).toBeLessThanOrEqual(MAX_OWNER_LENGTH);
    expect(long.endsWith('😀…')).toBe(true); // whole characters only, never half a pair
    expect(validateOwner('owner', long)).toBe(long);
  });

  it('travel after the token, and come back as given, whatever they contain', () => {
    for (const owner of ['web-1.example.com:42', 'a.b:c d/%25 ü', '.:.:']) {
      const token = acquisitionToken(owner);
      expect(token).toMatch(/^[\w-]{22}\.\d+\.[^:]+$/); // no `:`, which ends a hold's token
      expect(labelOf(token)?.owner).toBe(owner);
    }
    // A semaphore's permits ride along: `<token>.<since>p<permits>.<owner>`.
    const permit = acquisitionToken('w-1', 3);
    expect(permit).toMatch(/^[\w-]{22}\.\d+p3\.w-1$/);
    expect(labelOf(permit)?.owner).toBe('w-1');
    expect(acquisitionToken(undefined)).toMatch(/^[\w-]{22}$/);
    expect(labelOf(acquisitionToken(undefined))).toBeUndefined();
  });
});
