// Builds what the package ships, one bundle per public entry, readable (not minified; the
// in-memory Redis model of the testing kit aside, see IN_MEMORY):
// - dist/esm: native ESM for `import` and the `distlock` command, with code splitting, so
//   that code two entries share is one chunk (one copy of each class) and an `import()`
//   becomes a chunk loaded when it runs;
// - dist/cjs: CommonJS for `require` (esbuild cannot split CommonJS): the subpath entries
//   take the error classes from the main bundle (`require('../index.js')`), so that
//   `instanceof LockError` holds whichever entry threw;
// - the declarations of each entry, bundled by rollup-plugin-dts from tsc's output, in both
//   folders (a package.json with "type" in each tells TypeScript which format they describe),
//   and the declarations they share in dist/types.
// Packages (client libraries, commander, croner, cluster-key-slot) stay external.
import { spawn } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

/** The entries users import, by their path under dist/esm and dist/cjs. */
const LIBRARY = {
  index: 'src/index.ts',
  'testing/index': 'src/testing/index.ts',
  'telemetry/opentelemetry': 'src/telemetry/opentelemetry.ts',
  'schedule/node-cron': 'src/schedule/node-cron.ts',
  'nestjs/index': 'src/nestjs/index.ts',
};
/** The command, and the guardian process it starts from the script next to it (ESM only). */
const COMMAND = {
  'cli/main': 'src/cli/main.ts',
  'cli/guardian-process': 'src/cli/guardian-process.ts',
};
/**
 * The in-memory Redis model of `distlock/testing`, one minified ES module (a test double's
 * insides, read in the repository rather than debugged in the package, and a third of the
 * size that way): `InMemoryRedis` imports it on first use, in both formats (a CommonJS module
 * may `import()` an ES module), so that the package carries one copy and only its users load
 * the Lua VM it brings.
 */
const IN_MEMORY = { 'testing/in-memory': 'src/testing/in-memory/index.ts' };
/**
 * Modules whose classes a CommonJS subpath entry takes from the main bundle: errors (for
 * `instanceof`), `Locker`, which `distlock/nestjs` provides under its class as the token, and
 * the main entry itself (`NotSentError`, which the engine tells apart, for `InMemoryRedis`).
 */
const SHARED_IN_CJS = [resolve('src/errors.ts'), resolve('src/locker.ts'), resolve('src/index.ts')];
const TYPES = 'dist/.types';

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
  // Readable for debugging; TSDoc lives in the .d.ts files.
  minify: false,
};

/** Runs tsc with `args`; resolves to its exit code (or 1 if a signal ended it). */
const tsc = (args) =>
  new Promise((done, fail) => {
    const child = spawn(process.execPath, ['node_modules/typescript/bin/tsc', ...args], {
      stdio: 'inherit',
    });
    child.once('error', fail);
    child.once('exit', (code) => done(code ?? 1));
  });

/** `import ... from '../errors.js'` in a CommonJS subpath bundle: `require('../index.js')`. */
/** `import('./in-memory/index.js')` in the testing kit: the model's own module, at `path`. */
const inMemoryModel = (path) => ({
  name: 'in-memory-model',
  setup(on) {
    on.onResolve({ filter: /in-memory\/index\.js$/ }, () => ({ path, external: true }));
  },
});

const sharedFromMain = {
  name: 'shared-from-main',
  setup(on) {
    on.onResolve({ filter: /^\.\.?\// }, ({ path, resolveDir }) => {
      const target = resolve(resolveDir, path).replace(/\.js$/, '.ts');
      return SHARED_IN_CJS.includes(target) ? { path: '../index.js', external: true } : undefined;
    });
  },
};

rmSync('dist', { recursive: true, force: true });
const declarations = tsc([
  '-p',
  'tsconfig.build.json',
  '--emitDeclarationOnly',
  '--declarationMap',
  'false',
  '--sourceMap',
  'false',
  '--outDir',
  TYPES,
]);
await Promise.all([
  build({
    ...common,
    entryPoints: { ...LIBRARY, ...COMMAND },
    outdir: 'dist/esm',
    format: 'esm',
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    plugins: [inMemoryModel('./in-memory.js')],
    // src/driver/libraries.ts loads packages with `require` (esbuild's shim calls it).
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);",
    },
  }),
  build({
    ...common,
    entryPoints: IN_MEMORY,
    outdir: 'dist/esm',
    format: 'esm',
    minify: true,
  }),
  build({
    ...common,
    entryPoints: { index: LIBRARY.index },
    outdir: 'dist/cjs',
    format: 'cjs',
    ...commonJsMeta(),
  }),
  build({
    ...common,
    entryPoints: Object.fromEntries(Object.entries(LIBRARY).filter(([name]) => name !== 'index')),
    outdir: 'dist/cjs',
    format: 'cjs',
    plugins: [sharedFromMain, inMemoryModel('../../esm/testing/in-memory.js')],
    ...commonJsMeta(),
  }),
]);
const code = await declarations;
if (code !== 0) process.exit(code);

const bundle = await rollup({
  input: Object.fromEntries(
    Object.keys(LIBRARY).map((name) => [`esm/${name}`, `${TYPES}/${name}.d.ts`]),
  ),
  plugins: [dts()],
  onwarn(warning) {
    // A package's types stay where they are (node:tls, ioredis): the consumer resolves them.
    if (warning.code === 'UNRESOLVED_IMPORT' && !warning.exporter?.startsWith('.')) return;
    throw new Error(`declaration bundle: ${warning.message}`);
  },
});
// The declarations that entries share, once, in dist/types: a CommonJS folder, which both
// formats may import from (an ES module may import CommonJS, not the other way round).
await bundle.write({
  dir: 'dist',
  format: 'es',
  chunkFileNames: (chunk) => `types/${chunk.name.replace(/\.d$/, '')}-[hash].d.ts`,
});
await bundle.close();
// Each entry's declarations are written once, in dist/cjs (a CommonJS folder, which both
// formats may import from); the ES module entry's file re-exports them.
for (const name of Object.keys(LIBRARY)) {
  copyFileSync(`dist/esm/${name}.d.ts`, `dist/cjs/${name}.d.ts`); // same depth: same imports
  const depth = '../'.repeat(name.split('/').length);
  writeFileSync(`dist/esm/${name}.d.ts`, `export * from '${depth}cjs/${name}.js';\n`);
}
rmSync(TYPES, { recursive: true, force: true });
// esbuild starts each module's code with its path (`// src/engine/acquire.ts`): the package
// ships none of those files, and the lines were 1% of its size.
for (const file of readdirSync('dist', { recursive: true, encoding: 'utf8' })) {
  if (!file.endsWith('.js')) continue;
  const path = `dist/${file}`;
  writeFileSync(path, readFileSync(path, 'utf8').replace(/^\/\/ src\/\S+\.ts\n/gm, ''));
}
writeFileSync('dist/esm/package.json', '{ "type": "module" }\n');
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
writeFileSync('dist/types/package.json', '{ "type": "commonjs" }\n');

/**
 * `import.meta.url` in CommonJS (src/driver/libraries.ts loads packages relative to it): the
 * bundle's own file URL.
 */
function commonJsMeta() {
  return {
    define: { 'import.meta.url': '__bundleUrl' },
    banner: { js: 'const __bundleUrl = require("node:url").pathToFileURL(__filename).href;' },
  };
}
