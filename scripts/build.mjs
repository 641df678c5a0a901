// Builds what the package ships, readable (not minified; the in-memory Redis model of the
// testing kit aside, see IN_MEMORY). The library is one copy, in CommonJS, which both module
// systems load (an ES module may import CommonJS on every Node version; `require` of an ES
// module needs 20.19 or 22.12, and Jest's own `require` before Node 24.9 cannot do it):
// - dist/cjs: one bundle per public entry (esbuild cannot split CommonJS): the subpath entries
//   take the error classes, `Locker` and the main entry from the main bundle
//   (`require('../index.js')`), so that `instanceof LockError` holds whichever entry threw;
// - dist/esm: each public entry loads its CommonJS file and exports its names, so that `import`
//   and `require` get the same classes (no dual-package hazard) and the package carries the code
//   once; the `distlock` command is an ES module that takes the same shared modules from the
//   main CommonJS bundle;
// - dist/bundler: what bundlers take (the `module` condition), `export *` of the same files;
// - the declarations of each entry, bundled by rollup-plugin-dts from tsc's output, in both
//   folders (a package.json with "type" in each tells TypeScript which format they describe),
//   and the declarations they share in dist/types.
// Packages (client libraries, commander, croner, cluster-key-slot) stay external.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
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
 * The command takes them from there too.
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

/** `import('./in-memory/index.js')` in the testing kit: the model's own module, at `path`. */
const inMemoryModel = (path) => ({
  name: 'in-memory-model',
  setup(on) {
    on.onResolve({ filter: /in-memory\/index\.js$/ }, () => ({ path, external: true }));
  },
});

/**
 * `import ... from '../errors.js'` in a subpath entry or the command: the main bundle, at
 * `path`. The command, an ES module, loads it with `require` (see the ES module entries).
 */
const sharedFromMain = (path, { loadWithRequire = false } = {}) => ({
  name: 'shared-from-main',
  setup(on) {
    on.onResolve({ filter: /^\.\.?\// }, ({ path: imported, resolveDir }) => {
      const target = resolve(resolveDir, imported).replace(/\.js$/, '.ts');
      if (!SHARED_IN_CJS.includes(target)) return undefined;
      return loadWithRequire ? { path, namespace: 'main-bundle' } : { path, external: true };
    });
    on.onResolve({ filter: /.*/, namespace: 'main-bundle' }, () => ({ path, external: true }));
    on.onLoad({ filter: /.*/, namespace: 'main-bundle' }, () => ({
      contents: `module.exports = require(${JSON.stringify(path)});`,
      loader: 'js',
    }));
  },
});

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
    entryPoints: COMMAND,
    outdir: 'dist/esm',
    format: 'esm',
    plugins: [sharedFromMain('../../cjs/index.js', { loadWithRequire: true })],
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
    plugins: [sharedFromMain('../index.js'), inMemoryModel('../../esm/testing/in-memory.js')],
    ...commonJsMeta(),
  }),
]);
// Each ES module entry loads its CommonJS file with `require`, and exports its names: an
// `import` of CommonJS would scan the whole bundle for those names first (cjs-module-lexer,
// about 20 ms for the main one), on every start.
// Bundlers, which resolve the `module` condition before `import`, get `export *` from the
// same file instead: they read it when they build, and cannot follow a `require` made at
// run time.
for (const name of Object.keys(LIBRARY)) {
  const depth = '../'.repeat(name.split('/').length);
  mkdirSync(dirname(`dist/bundler/${name}.js`), { recursive: true });
  writeFileSync(`dist/bundler/${name}.js`, `export * from '${depth}cjs/${name}.js';\n`);
  mkdirSync(dirname(`dist/esm/${name}.js`), { recursive: true });
  writeFileSync(
    `dist/esm/${name}.js`,
    [
      "import { createRequire } from 'node:module';",
      `const entry = createRequire(import.meta.url)('${depth}cjs/${name}.js');`,
      `export const { ${exportedNames(`dist/cjs/${name}.js`).join(', ')} } = entry;`,
      '',
    ].join('\n'),
  );
}
sharedNamesExported();
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
writeFileSync('dist/bundler/package.json', '{ "type": "module" }\n');
writeFileSync('dist/cjs/package.json', '{ "type": "commonjs" }\n');
writeFileSync('dist/types/package.json', '{ "type": "commonjs" }\n');

/**
 * `import.meta.url` in CommonJS (src/driver/libraries.ts loads packages relative to it): the
 * bundle's own file URL. Unset, and nothing required, when a bundler has put this file in an
 * ES module of its own (bundlers take these files, under the `module` condition).
 */
function commonJsMeta() {
  return {
    define: { 'import.meta.url': '__bundleUrl' },
    banner: {
      js: 'const __bundleUrl = typeof __filename === "string" ? require("node:url").pathToFileURL(__filename).href : undefined;',
    },
  };
}

/**
 * Fails the build if an entry takes from the main bundle a name it does not export (a
 * CommonJS entry would read `undefined`, the command would not start; a module listed in
 * SHARED_IN_CJS must keep its other exports elsewhere), or has its own copy of a class the
 * main bundle defines.
 */
function sharedNamesExported() {
  const exported = new Set(exportedNames('dist/cjs/index.js'));
  const mainClasses = new Set(classesIn(readFileSync('dist/cjs/index.js', 'utf8')));
  const missing = [];
  const twice = [];
  for (const file of readdirSync('dist', { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.js') || file === 'cjs/index.js') continue;
    const code = readFileSync(`dist/${file}`, 'utf8');
    for (const name of classesIn(code)) if (mainClasses.has(name)) twice.push(`${file}: ${name}`);
    const taken = [];
    const bindings = code.matchAll(
      /var (import_\w+) = (?:require\("\.\.\/index\.js"\)|__toESM\(require_cjs\(\), 1\))/g,
    );
    for (const [, binding] of bindings) {
      for (const [, name] of code.matchAll(new RegExp(`\\b${binding}\\.(\\w+)`, 'g')))
        taken.push(name);
    }
    for (const name of taken) if (!exported.has(name)) missing.push(`${file}: ${name}`);
  }
  if (missing.length > 0) {
    throw new Error(`entries take names the main bundle does not export: ${missing.join(', ')}`);
  }
  // A second copy of a class breaks `instanceof` on what the main bundle throws or returns.
  if (twice.length > 0) {
    throw new Error(`entries define classes the main bundle has too: ${twice.join(', ')}`);
  }
}

/** The classes a bundle defines at its top level (`var Name = class` or `class Name`). */
function classesIn(code) {
  return [...code.matchAll(/^(?:var (\w+) = class\b|class (\w+))/gm)].map(([, a, b]) => a ?? b);
}

/** The names a CommonJS bundle exports, from the list esbuild writes at its end. */
function exportedNames(file) {
  const code = readFileSync(file, 'utf8');
  const list = code.slice(code.lastIndexOf('0 && (module.exports = {'));
  const names = list.match(/\b[A-Za-z_$][\w$]*(?=,|\n\})/g) ?? [];
  if (names.length === 0) throw new Error(`${file}: no export list`);
  return names;
}
