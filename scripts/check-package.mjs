// `npm run check:package`: packs the built package as `npm publish` would and checks the
// tarball: the files a consumer needs are in it, every source map points at a shipped source,
// @arethetypeswrong/cli finds types for every entry point under every resolution mode
// (node10, node16 from CJS and ESM, bundler), and publint finds nothing to report.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';

const REQUIRED = [
  'LICENSE',
  'README.md',
  'package.json',
  'dist/esm/index.js',
  'dist/esm/index.d.ts',
  'dist/cjs/index.js',
  'dist/cjs/index.d.ts',
  'dist/esm/cli/main.js',
  'dist/esm/cli/guardian-process.js', // started by `distlock run`, next to main.js
  'dist/esm/testing/index.js',
  'testing/package.json',
  'dist/esm/telemetry/opentelemetry.js',
  'opentelemetry/package.json',
  'dist/esm/schedule/node-cron.js',
  'node-cron/package.json',
  'dist/esm/nestjs/index.js',
  'nestjs/package.json',
];

const dir = mkdtempSync(join(tmpdir(), 'distlock-pack-'));
try {
  // The scripts were run by `npm test` (build); pack what was built.
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
      encoding: 'utf8',
    }),
  );
  const files = new Set(packed.files.map((f) => f.path));
  const missing = REQUIRED.filter((f) => !files.has(f));
  if (missing.length > 0) throw new Error(`the package lacks ${missing.join(', ')}`);

  const unshipped = [];
  for (const map of [...files].filter((f) => f.endsWith('.map'))) {
    for (const source of JSON.parse(readFileSync(map, 'utf8')).sources) {
      const path = normalize(join(dirname(map), source));
      if (!files.has(path)) unshipped.push(`${map} -> ${path}`);
    }
  }
  if (unshipped.length > 0) {
    throw new Error(`source maps point at files not in the package:\n${unshipped.join('\n')}`);
  }

  const tarball = join(dir, packed.filename);
  execFileSync(
    process.execPath,
    [join('node_modules', '@arethetypeswrong/cli/dist/index.js'), tarball, '--format', 'table'],
    { stdio: 'inherit' },
  );
  // --strict fails on warnings; a suggestion (such as a missing "sideEffects") fails too.
  const lint = execFileSync(
    process.execPath,
    [join('node_modules', 'publint/src/cli.js'), 'run', tarball, '--strict'],
    { encoding: 'utf8' },
  );
  process.stdout.write(lint);
  if (!lint.includes('All good!')) throw new Error('publint has suggestions for the package');
  console.log(
    `package check: ${files.size} files, ${packed.size} bytes packed; attw and publint clean`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
