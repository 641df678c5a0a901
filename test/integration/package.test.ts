import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * Checks the built package (`npm run build` runs before the tests) the way consumers load it:
 * by name, through the `exports` map, from ESM and from CommonJS, with types for each.
 */
const node = (code: string, type: 'module' | 'commonjs') =>
  execFileSync(process.execPath, [`--input-type=${type}`, '-e', code], { encoding: 'utf8' });

describe('package exports', () => {
  it('loads from ESM and CommonJS with the same public names', () => {
    const show = 'Object.keys(d).sort().join(",")';
    const esm = node(`const d = await import('distlock'); console.log(${show});`, 'module');
    const cjs = node(`const d = require('distlock'); console.log(${show});`, 'commonjs');
    expect(esm).toBe(cjs);
    expect(esm).toContain('Locker');
    expect(esm).toContain('LockError');
    expect(esm).not.toContain('acquireScript');
  });

  it('ships distlock/testing to both module systems', () => {
    const esm = node(
      `const t = await import('distlock/testing'); console.log(typeof t.startRedis);`,
      'module',
    );
    const cjs = node(`console.log(typeof require('distlock/testing').startRedis);`, 'commonjs');
    expect([esm.trim(), cjs.trim()]).toEqual(['function', 'function']);
  });

  it('ships distlock/opentelemetry to both module systems, and only it imports the API', () => {
    const esm = node(
      `const t = await import('distlock/opentelemetry'); console.log(typeof t.openTelemetry);`,
      'module',
    );
    const cjs = node(
      `console.log(typeof require('distlock/opentelemetry').openTelemetry);`,
      'commonjs',
    );
    expect([esm.trim(), cjs.trim()]).toEqual(['function', 'function']);
    // The main entry must load without the optional peer.
    const loaded = node(
      `require('distlock'); console.log(Object.keys(require.cache).some((f) => f.includes('@opentelemetry')));`,
      'commonjs',
    );
    expect(loaded.trim()).toBe('false');
  });

  it('resolves types for ESM and CommonJS consumers', () => {
    // Throws (and prints the compiler errors) if either consumer fails to type-check.
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'test/package'], {
      encoding: 'utf8',
    });
  });
});
