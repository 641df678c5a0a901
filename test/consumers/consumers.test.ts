import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
 * consumer projects (ESM and CommonJS, TypeScript `node16` and `bundler`) with ioredis 5 and
 * 6, where the examples of the README, docs/ and bench/README.md type-check and the runnable
 * ones run.
 */
const dir = mkdtempSync(join(tmpdir(), 'distlock-consumers-'));
const examples = documentationExamples();
let packed: { tarball: string; files: string[] };
let redis: RedisNodes;
let admin: Redis;

/**
 * Type-checks `project` with `config`; throws with the compiler's messages, each example's
 * position followed by the page and line it stands for (`[docs/cli.md:45]`).
 */
function tsc(project: string, config: string): void {
  try {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', config], {
      cwd: project,
      encoding: 'utf8',
    });
  } catch (error) {
    const output = withSources(String((error as { stdout?: string }).stdout), examples);
    throw new Error(`tsc -p ${config}:\n${output}`);
  }
}

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.urls[0] as string);
  packed = packFreshCheckout(dir);
}, 120_000);

afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('npm pack from a fresh checkout', () => {
  it('builds before packing, and ships the licence, the sources of its maps and node10 types', () => {
    expect(packed.files).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'dist/esm/index.js',
        'dist/cjs/index.js',
        'dist/esm/index.js.map',
        'src/index.ts',
        'dist/esm/cli/main.js',
        'testing/package.json',
        'opentelemetry/package.json',
      ]),
    );
  });
});

describe('the README, docs/ and bench/README.md', () => {
  it('marks whole programs as runnable, and every block is one or the other', () => {
    expect(examples.length).toBeGreaterThanOrEqual(34);
    expect(examples.filter((e) => e.runs).map((e) => [e.page, e.code])).toEqual([
      ['README.md', expect.stringContaining("from 'distlock'")],
      ['README.md', expect.stringContaining('.election(')],
      ['docs/testing-kit.md', expect.stringContaining("from 'distlock/testing'")],
      ['docs/testing-kit.md', expect.stringContaining('proxy.orphan()')],
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

for (const [label, ioredis] of [
  ['ioredis 5', IOREDIS_5],
  ['ioredis 6', IOREDIS_6],
  ['ioredis 5.3', IOREDIS_OLDEST],
] as const) {
  describe(`a consumer project with ${label} (${ioredis})`, () => {
    const project = join(dir, label.replaceAll(' ', '-'));

    beforeAll(() => consumerProject(project, packed.tarball, ioredis), 120_000);

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

    it('type-checks the documented examples and a CommonJS consumer (node16, strictest options)', () => {
      tsc(project, 'tsconfig.node16.json'); // throws with the compiler's errors
    }, 60_000);

    it('type-checks the documented examples with moduleResolution bundler', () => {
      tsc(project, 'tsconfig.bundler.json');
    }, 60_000);

    it('type-checks the CommonJS consumer with module commonjs and node10 resolution', () => {
      tsc(project, 'tsconfig.node10.json');
    }, 60_000);

    it('runs the runnable examples: they exit, and leave no key behind', async () => {
      for (const example of examples.filter((e) => e.runs)) {
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
    }, 60_000);

    it('runs as CommonJS: require() loads the CJS build and its testing kit', () => {
      const output = execFileSync(process.execPath, ['out/consumer.cjs'], {
        cwd: project,
        encoding: 'utf8',
        env: { ...process.env, REDIS_URL: redis.urls[0] },
      });
      expect(output.split('\n')).toEqual([
        'acquired cjs-consumer; second: null; release: released',
        'startRedis: function',
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
