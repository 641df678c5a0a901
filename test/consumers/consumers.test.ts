import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';
import { until } from '../../src/testing/until.js';
import { isRunning } from '../support/processes.js';
import {
  consumerProject,
  IOREDIS_5,
  IOREDIS_6,
  IOREDIS_OLDEST,
  installTarball,
  packFreshCheckout,
} from './project.js';
import {
  documentationExamples,
  exampleFile,
  exampleSource,
  withSources,
} from './readme-examples.js';

/**
 * distlock as its users get it: packed from a fresh checkout, installed from the tarball into
 * consumer projects (ESM and CommonJS, TypeScript `node16`, `bundler` and `node10`, and npm's
 * latest TypeScript) with ioredis 5, 6 and 5.3, where the examples of the README, docs/ and
 * bench/README.md type-check and the runnable ones run (every one with ioredis 5, the
 * README's with the others).
 *
 * Packing, installing and type-checking take most of this file's time and are CPU work for
 * separate processes: the projects' dependencies install while distlock is packed, and the
 * type checks run in the background as soon as their project is ready, a few at a time,
 * each test awaiting its own. Nothing runs an example before every check is over, so that the
 * examples and the bin run on an otherwise idle machine, as before.
 */
const dir = mkdtempSync(join(tmpdir(), 'distlock-consumers-'));
const examples = documentationExamples();
const PROJECTS = [
  ['ioredis 5', IOREDIS_5],
  ['ioredis 6', IOREDIS_6],
  ['ioredis 5.3', IOREDIS_OLDEST],
] as const;
const CONFIGS = ['tsconfig.node16.json', 'tsconfig.bundler.json', 'tsconfig.node10.json'] as const;
/** The repository's TypeScript (5.x), and npm's `latest` (TypeScript 7 has no node10 resolution). */
const TYPESCRIPT = 'typescript';
const TYPESCRIPT_LATEST = 'typescript-latest';
const LATEST_CONFIGS = [
  'tsconfig.node16.json',
  'tsconfig.bundler.json',
  'tsconfig.defaults.json',
] as const;
/**
 * The project checked with every config and with npm's latest TypeScript. How distlock's types
 * resolve does not depend on the ioredis version: the other projects get the node16 check
 * (the strictest, and the one that emits the examples they run), for the client's types.
 */
const MAIN_PROJECT = 'ioredis 5';
/**
 * Whether the project `label` runs `example`: the main project runs every runnable example;
 * the others (other ioredis versions) the README's, which lock, extend and release on their
 * client, so that the suite's time goes to what differs between them.
 */
const runsIn = (label: string, example: { readonly page: string }) =>
  label === MAIN_PROJECT || example.page === 'README.md';
/** The configs checked in the project `label`. */
const configsOf = (label: string) => (label === MAIN_PROJECT ? CONFIGS : CONFIGS.slice(0, 1));
const projectDir = (label: string) => join(dir, label.replaceAll(' ', '-'));
let packed: { tarball: string; files: string[]; unpackedSize: number };
let redis: RedisNodes;
let admin: Redis;

/** A tsc that has not finished in this long hangs (a check takes 5 to 15 s of CPU). */
const TSC_LIMIT_MS = 180_000;
/** A test that awaits a check may wait for the ones queued before it. */
const CHECK_TEST_MS = 600_000;

/**
 * Type-checks `project` with `config`; rejects with the compiler's messages, each example's
 * position followed by the page and line it stands for (`[docs/cli.md:45]`).
 */
async function tsc(project: string, config: string, compiler = TYPESCRIPT): Promise<void> {
  // The latest compiler only checks: the repository's writes out/, which the examples run from.
  const emit = compiler === TYPESCRIPT ? [] : ['--noEmit'];
  try {
    await promisify(execFile)(
      process.execPath,
      [`node_modules/${compiler}/bin/tsc`, '-p', config, ...emit],
      {
        cwd: project,
        encoding: 'utf8',
        timeout: TSC_LIMIT_MS,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
  } catch (error) {
    const { stdout, killed } = error as { stdout?: string; killed?: boolean };
    const output = withSources(String(stdout), examples);
    const why = killed ? ` (killed: still running after ${TSC_LIMIT_MS / 1000} s)` : '';
    throw new Error(`${compiler}: tsc -p ${config}${why}:\n${output}`);
  }
}

/** Runs the tasks given to it `limit` at a time, in the order given. */
function queue(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return (task) =>
    new Promise((resolve, reject) => {
      const start = () => {
        active++;
        task()
          .then(resolve, reject)
          .finally(() => {
            active--;
            waiting.shift()?.();
          });
      };
      if (active < limit) start();
      else waiting.push(start);
    });
}

/** Each project's type checks by config; a check's failure is its own test's. */
const checks = new Map<string, Map<string, Promise<void>>>();
/** Settles when every type check started so far has. */
const checked = () =>
  Promise.allSettled([...checks.values()].flatMap((byConfig) => [...byConfig.values()]));

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.urls[0] as string);
  const packing = packFreshCheckout(dir);
  // Each project's dependencies meanwhile, one project after another.
  const projects = (async () => {
    for (const [label, ioredis] of PROJECTS) {
      await consumerProject(projectDir(label), ioredis, {
        latestTypeScript: label === MAIN_PROJECT,
      });
    }
  })();
  // Let neither reject unobserved while the other is awaited.
  await Promise.all([packing, projects]);
  packed = await packing;
  // Two tsc processes fill a two-core machine; each holds about 350 MB.
  const typeCheck = queue(Math.max(1, Math.min(availableParallelism(), 4)));
  for (const [label] of PROJECTS) {
    const project = projectDir(label);
    await installTarball(project, packed.tarball);
    const byConfig = new Map<string, Promise<void>>();
    const started = (key: string, check: Promise<void>) => {
      check.catch(() => {}); // observed by its test
      byConfig.set(key, check);
    };
    for (const config of configsOf(label))
      started(
        config,
        typeCheck(() => tsc(project, config)),
      );
    if (label === MAIN_PROJECT) {
      for (const config of LATEST_CONFIGS) {
        started(
          `latest ${config}`,
          typeCheck(() => tsc(project, config, TYPESCRIPT_LATEST)),
        );
      }
    }
    checks.set(label, byConfig);
  }
}, 300_000);

afterAll(async () => {
  await checked(); // no tsc left writing into the directory removed below
  admin?.disconnect();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
}, CHECK_TEST_MS);

describe('npm pack from a fresh checkout', () => {
  it('builds before packing, and ships the licence, one bundle per entry and node10 types', () => {
    expect(packed.files).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'dist/esm/index.js',
        'dist/esm/index.d.ts',
        'dist/cjs/index.js',
        'dist/cjs/index.d.ts',
        'dist/esm/cli/main.js',
        'dist/esm/cli/guardian-process.js',
        'testing/package.json',
        'opentelemetry/package.json',
        'node-cron/package.json',
      ]),
    );
    // Readable bundles are what users run and debug: no sources, no source maps.
    expect(packed.files.filter((f) => f.startsWith('src/') || f.endsWith('.map'))).toEqual([]);
    expect(packed.files.length).toBeLessThanOrEqual(300);
    // One copy of the library, in CommonJS, which the ES module entries re-export (issue 37).
    expect(packed.unpackedSize).toBeLessThanOrEqual(1_000_000);
  });
});

describe('the README, docs/ and bench/README.md', () => {
  it('marks whole programs as runnable, and every block is one or the other', () => {
    expect(examples.length).toBeGreaterThanOrEqual(34);
    expect(examples.filter((e) => e.runs).map((e) => [e.page, e.code])).toEqual([
      ['README.md', expect.stringContaining("from 'distlock'")],
      ['docs/election.md', expect.stringContaining('.election(')],
      ['docs/holding.md', expect.stringContaining("locker.forceRelease('nightly-report')")],
      ['docs/holding.md', expect.stringContaining("locker.list({ match: 'report:*' })")],
      ['docs/nestjs.md', expect.stringContaining('DistlockModule.forRoot(')],
      ['docs/scheduled-jobs.md', expect.stringContaining('await job.stop()')],
      ['docs/testing-kit.md', expect.stringContaining("from 'distlock/testing'")],
      ['docs/testing-kit.md', expect.stringContaining('proxy.orphan()')],
      ['docs/testing-kit.md', expect.stringContaining('client.disconnect()')],
      ['docs/testing-kit.md', expect.stringContaining('new InMemoryRedis()')],
    ]);
  });

  it('gives every example a file of its own, named by its page and line', () => {
    const files = examples.map(exampleFile);
    expect(new Set(files).size).toBe(files.length);
    expect(files).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^readme\/readme-line-\d{4}\.ts$/),
        expect.stringMatching(/^readme\/docs-testing-kit-line-\d{4}\.ts$/),
      ]),
    );
  });
});

for (const [label, ioredis] of PROJECTS) {
  describe(`a consumer project with ${label} (${ioredis})`, () => {
    const project = projectDir(label);
    const check = (
      config: (typeof CONFIGS)[number] | `latest ${(typeof LATEST_CONFIGS)[number]}`,
    ) => {
      const started = checks.get(label)?.get(config);
      if (!started) throw new Error(`${label}: no ${config} check started`);
      return started; // rejects with the compiler's errors
    };

    it("installs one copy of ioredis: the project's own", () => {
      const version = (path: string) =>
        (
          JSON.parse(readFileSync(join(project, path, 'package.json'), 'utf8')) as {
            version: string;
          }
        ).version;
      expect(version('node_modules/ioredis')).toBe(ioredis);
      expect(existsSync(join(project, 'node_modules/distlock/node_modules/ioredis'))).toBe(false);
    });

    it(
      'type-checks the documented examples and a CommonJS consumer (node16, strictest options)',
      async () => {
        await check('tsconfig.node16.json');
      },
      CHECK_TEST_MS,
    );

    if (label === MAIN_PROJECT) {
      it(
        'type-checks the documented examples with moduleResolution bundler',
        async () => {
          await check('tsconfig.bundler.json');
        },
        CHECK_TEST_MS,
      );

      it(
        'type-checks the CommonJS consumer with module commonjs and node10 resolution',
        async () => {
          await check('tsconfig.node10.json');
        },
        CHECK_TEST_MS,
      );

      it(
        "type-checks the documented examples with npm's latest TypeScript, and the testing kit at its defaults",
        async () => {
          const latest = JSON.parse(
            readFileSync(join(project, 'node_modules', TYPESCRIPT_LATEST, 'package.json'), 'utf8'),
          ) as { version: string };
          console.log(`npm's latest TypeScript: ${latest.version}`);
          await check('latest tsconfig.node16.json');
          await check('latest tsconfig.bundler.json');
          await check('latest tsconfig.defaults.json');
        },
        CHECK_TEST_MS,
      );
    }

    it(
      label === MAIN_PROJECT
        ? 'runs the runnable examples: they exit, and leave no key behind'
        : "runs the README's runnable examples on this client: they exit, and leave no key behind",
      async () => {
        await checked(); // the node16 check emits them; the others must not compete with them
        for (const example of examples.filter((e) => e.runs && runsIn(label, e))) {
          const compiled = join(project, 'out', exampleFile(example).replace(/\.ts$/, '.js'));
          let output: string;
          try {
            output = execFileSync(process.execPath, [compiled], {
              cwd: project,
              encoding: 'utf8',
              timeout: 20_000, // an example that never exits fails here
              env: { ...process.env, REDIS_URL: redis.urls[0] },
            });
          } catch (error) {
            const { stderr } = error as { stderr?: string };
            throw new Error(`${exampleSource(example)} failed: ${stderr ?? String(error)}`);
          }
          expect(output, exampleSource(example)).not.toContain('Error');
        }
        expect(await admin.dbsize()).toBe(0);
      },
      CHECK_TEST_MS,
    );

    it('runs as CommonJS: require() loads the CJS build, its testing kit and node-cron coordinator', () => {
      const output = execFileSync(process.execPath, ['out/consumer.cjs'], {
        cwd: project,
        encoding: 'utf8',
        env: { ...process.env, REDIS_URL: redis.urls[0] },
      });
      expect(output.split('\n')).toEqual([
        'acquired cjs-consumer; second: null; release: released',
        'startRedis: function',
        'runCoordinator: function',
        '',
      ]);
    }, 30_000);
  });
}

describe('the installed bin (node_modules/.bin/distlock)', () => {
  it('forwards SIGTERM to the command, releases the lock and exits 128 + 15', async () => {
    const project = join(dir, 'ioredis-6');
    const child = spawn(
      join(project, 'node_modules/.bin/distlock'),
      ['run', '--key', 'bin-test', '--redis', redis.urls[0] as string, '--', 'sleep', '30'],
      { cwd: project, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const sleeper = await until<number>(
      'the command to run under the lock',
      async () => {
        const held = (await admin.exists('distlock:{bin-test}')) === 1;
        const pid = execFileSync('pgrep', ['-P', String(child.pid), 'sleep'])
          .toString()
          .trim();
        return held ? { done: Number(pid) } : { reason: 'lock not taken yet' };
      },
      10_000,
    );
    const started = Date.now();
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(143);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(isRunning(sleeper)).toBe(false);
    expect(await admin.exists('distlock:{bin-test}')).toBe(0);
  }, 30_000);
});
