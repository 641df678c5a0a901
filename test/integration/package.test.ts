import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';

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

  it('gives `import` and `require` the same classes: one copy of the library', () => {
    const same = node(
      "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url); " +
        "const esm = await import('distlock'); const cjs = require('distlock'); " +
        'console.log(esm.Locker === cjs.Locker, esm.LockError === cjs.LockError, ' +
        "(await import('distlock/nestjs')).DistlockModule === require('distlock/nestjs').DistlockModule);",
      'module',
    );
    expect(same.trim()).toBe('true true true');
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

/** Packages of node_modules that `code` (run as `type`) loaded, by name. */
const loadedPackages = (code: string, type: 'module' | 'commonjs', cwd = process.cwd()) => {
  const list =
    "const { createRequire } = await import('node:module'); " +
    "const cache = createRequire(process.cwd() + '/').cache; " +
    'console.log(JSON.stringify(Object.keys(cache).map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(f)?.[1]).filter(Boolean)));';
  const wrapped = type === 'module' ? `${code}; ${list}` : `${code}; (async () => { ${list} })();`;
  const out = execFileSync(process.execPath, [`--input-type=${type}`, '-e', wrapped], {
    encoding: 'utf8',
    cwd,
  });
  return new Set(JSON.parse(out) as string[]);
};

/** What only some users use: client libraries, the CLI's parser, Cluster and cron code. */
const ON_DEMAND = [
  'ioredis',
  'iovalkey',
  'redis',
  '@redis/client',
  '@valkey/valkey-glide',
  'cluster-key-slot',
  'croner',
  'commander',
  '@opentelemetry/api',
  'node-cron',
  'fengari',
];

describe('what importing distlock loads', () => {
  it('loads no client library, nor the CLI, Cluster or cron packages, until used', () => {
    for (const [code, type] of [
      ["await import('distlock')", 'module'],
      ["require('distlock')", 'commonjs'],
    ] as const) {
      const loaded = [...loadedPackages(code, type)];
      expect(
        loaded.filter((name) => ON_DEMAND.includes(name)),
        code,
      ).toEqual([]);
    }
    // They load when used: a URL node loads ioredis, a schedule croner.
    const used = loadedPackages(
      "const { Locker, schedule } = require('distlock'); " +
        "const locker = new Locker({ nodes: ['redis://127.0.0.1:1'] }); " +
        "schedule(locker, 'job', '0 0 1 1 *', { lockAtMostFor: 1000 }, () => {}).stop(); locker.close()",
      'commonjs',
    );
    expect([...used].filter((name) => ON_DEMAND.includes(name)).sort()).toEqual([
      'croner',
      'ioredis',
    ]);
  });

  it('loads the Lua VM only for a first InMemoryRedis, from ESM and CommonJS alike', () => {
    for (const [code, type] of [
      ["await import('distlock/testing')", 'module'],
      ["require('distlock/testing')", 'commonjs'],
    ] as const) {
      expect(loadedPackages(code, type).has('fengari'), code).toBe(false);
    }
    // A CommonJS test imports the model's ES module, and its engine knows NotSentError.
    const cjs = node(
      "const { Locker, NotSentError } = require('distlock'); const { InMemoryRedis } = require('distlock/testing'); " +
        '(async () => { const redis = new InMemoryRedis(); const locker = new Locker({ nodes: [redis] }); ' +
        "const lock = await locker.acquire('job', { ttlMs: 5000 }); await lock.release(); redis.kill(); " +
        "const error = await redis.send('PING', []).catch((e) => e); await locker.close(); " +
        "console.log(lock.resource, error instanceof NotSentError, Object.keys(require.cache).some((f) => f.includes('fengari'))); })();",
      'commonjs',
    );
    expect(cjs.trim()).toBe('job true true');
  });

  it('throws the same error classes from every CommonJS entry', () => {
    const same = node(
      "const { LockError, InvalidArgumentError } = require('distlock'); " +
        "try { require('distlock/node-cron').runCoordinator(null, {}); } catch (e) { console.log(e instanceof InvalidArgumentError && e instanceof LockError); }",
      'commonjs',
    );
    expect(same.trim()).toBe('true');
  });
});

describe('a project without ioredis', () => {
  // The package as installed (dist and its package.json), with its own dependencies but no
  // client library anywhere on the resolution path.
  const project = mkdtempSync(join(tmpdir(), 'distlock-no-ioredis-'));
  const modules = join(project, 'node_modules');
  mkdirSync(join(modules, 'distlock'), { recursive: true });
  for (const entry of ['package.json', 'dist']) {
    cpSync(entry, join(modules, 'distlock', entry), { recursive: true });
  }
  for (const name of ['commander', 'croner', 'cluster-key-slot']) {
    symlinkSync(resolve('node_modules', name), join(modules, name));
  }
  afterAll(() => rmSync(project, { recursive: true, force: true }));
  const run = (args: string[]) =>
    spawnSync(process.execPath, args, { cwd: project, encoding: 'utf8', timeout: 30_000 });

  it('says to install fengari, as a dev dependency, when an InMemoryRedis is first used', () => {
    const { stdout } = run([
      '--input-type=module',
      '-e',
      "const { InMemoryRedis } = await import('distlock/testing'); " +
        "const { MissingLibraryError } = await import('distlock'); " +
        'const error = await new InMemoryRedis().connect().catch((e) => e); ' +
        'console.log(error instanceof MissingLibraryError, error.library, error.message);',
    ]);
    expect(stdout.trim()).toBe(
      'true fengari distlock needs fengari to run its Lua scripts in an InMemoryRedis, and it is not installed: npm install fengari (as a dev dependency: npm install --save-dev fengari).',
    );
  });

  it('imports distlock, and a URL node says to install ioredis, before any I/O', () => {
    const construct =
      "try { new Locker({ nodes: ['redis://127.0.0.1:1'] }); } catch (e) { console.log(e.code, e instanceof LockError, e.message); }";
    for (const [load, type] of [
      ["const { Locker, LockError } = await import('distlock');", 'module'],
      ["const { Locker, LockError } = require('distlock');", 'commonjs'],
    ] as const) {
      const { stdout, stderr, status } = run([`--input-type=${type}`, '-e', load + construct]);
      expect(stderr).toBe('');
      expect(status).toBe(0);
      expect(stdout).toContain('MISSING_LIBRARY true distlock needs ioredis');
      expect(stdout).toContain('npm install ioredis');
    }
  });

  it('bundles with esbuild into CommonJS, and into an ES module given a `require`', () => {
    // Bundlers take the `module` condition: an `export *` of the CommonJS bundle, which they
    // read as they build. An ES module bundle needs the banner every bundle of CommonJS code
    // that loads Node's modules needs (ioredis's own included).
    writeFileSync(
      join(project, 'app.mjs'),
      "import { Locker, LockError } from 'distlock';\n" +
        "import { FaultProxy } from 'distlock/testing';\n" +
        "try { new Locker({ nodes: ['redis://127.0.0.1:1'] }); } catch (e) { console.log(e.code, e instanceof LockError, typeof FaultProxy); }\n",
    );
    const banner =
      "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";
    for (const [format, extra] of [
      ['cjs', {}],
      ['esm', { banner: { js: banner } }],
    ] as const) {
      const outfile = join(project, `bundled-${format}.${format === 'cjs' ? 'cjs' : 'mjs'}`);
      buildSync({
        entryPoints: [join(project, 'app.mjs')],
        bundle: true,
        platform: 'node',
        format,
        outfile,
        logLevel: 'silent',
        ...extra,
      });
      // The library is in the bundle: the package itself is gone.
      const { stdout, stderr } = spawnSync(process.execPath, [outfile], {
        cwd: tmpdir(),
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect([format, stderr, stdout.trim()]).toEqual([
        format,
        '',
        'MISSING_LIBRARY true function',
      ]);
    }
  });

  it('runs `distlock --help`, and `distlock run` says to install ioredis', () => {
    const cli = join(modules, 'distlock/dist/esm/cli/main.js');
    const help = run([cli, '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: distlock');
    const locked = run([cli, 'run', '--redis', 'redis://127.0.0.1:1', 'job', '--', 'true']);
    expect(locked.stderr).toBe(
      'distlock: distlock needs ioredis to connect to Redis, and it is not installed: npm install ioredis.\n',
    );
    expect(locked.status).toBe(EXIT.unavailable);
  });
});
