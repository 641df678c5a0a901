import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bundleWorker, renamedClasses } from '../../simulation/worker-bundle.js';

describe("the simulation pool's worker bundle", () => {
  it('finds a class that esbuild renamed because another module declares its name', () => {
    const code = [
      'var LockLostError = class extends Error {};',
      'var LockLostError2 = class extends Error {};',
      'function pause(ms) {}',
      'var pause2 = class {};',
      'var Sha256 = class {};',
      'var $x = 1;',
      'var $x3 = class {};',
    ].join('\n');
    expect(renamedClasses(code)).toEqual(['LockLostError2', 'pause2', '$x3']);
    expect(renamedClasses('var Sha256 = class {};\nvar Base64 = class {};')).toEqual([]);
  });

  it('is named by its contents, and keeps every class name', async () => {
    const file = await bundleWorker();
    expect(file).toMatch(/node_modules\/\.cache\/distlock\/simulation-worker-[0-9a-f]{16}\.mjs$/);
    const code = readFileSync(file, 'utf8');
    expect(renamedClasses(code)).toEqual([]);
    expect(code).toMatch(/^var NotSentError = class extends Error\b/m);
    expect(await bundleWorker()).toBe(file); // the same sources, the same file
  });
});
