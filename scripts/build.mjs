// Builds dist/esm (native ESM) and dist/cjs (CommonJS) from the same sources, each with its
// own .d.ts files, so that `import` and `require` consumers both get types that match the
// module format they load (a package.json with "type" marks each folder).
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';

const tsc = (args) =>
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', ...args], {
    stdio: 'inherit',
  });

rmSync('dist', { recursive: true, force: true });
tsc(['-p', 'tsconfig.build.json']);
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
]);
writeFileSync('dist/esm/package.json', '{ "type": "module" }\n');
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
