// Builds dist/esm (native ESM) and dist/cjs (CommonJS) from the same sources, each with its
// own .d.ts files, so that `import` and `require` consumers both get types that match the
// module format they load (a package.json with "type" marks each folder).
// The two compilations share nothing but their inputs: they run at once, one per core.
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';

/** Runs tsc with `args`; resolves to its exit code (or 1 if a signal ended it). */
const tsc = (args) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['node_modules/typescript/bin/tsc', ...args], {
      stdio: 'inherit',
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });

rmSync('dist', { recursive: true, force: true });
const codes = await Promise.all([
  tsc(['-p', 'tsconfig.build.json']),
  tsc([
    '-p',
    'tsconfig.build.json',
    '--module',
    'CommonJS',
    '--moduleResolution',
    'Node10',
    '--verbatimModuleSyntax',
    'false',
    '--outDir',
    'dist/cjs',
  ]),
]);
const failed = codes.find((code) => code !== 0);
if (failed !== undefined) process.exit(failed);
writeFileSync('dist/esm/package.json', '{ "type": "module" }\n');
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
