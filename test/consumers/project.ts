import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { documentationExamples, exampleFile } from './readme-examples.js';

const REPO = new URL('../..', import.meta.url).pathname;
const FIXTURES = new URL('.', import.meta.url).pathname;

/** The version of `name` that the repository itself installed (from npm's cache, then). */
const installed = (name: string) =>
  (
    JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;

const run = promisify(execFile);

/** Runs npm in `cwd` (asynchronously, so that packing, installs and type checks overlap). */
async function npm(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/**
 * Packs distlock the way a fresh clone publishes it: in a copy of the sources without dist/,
 * so that only `prepack` can build what the tarball holds. Resolves to the tarball's path,
 * the files it lists and their size.
 */
export async function packFreshCheckout(
  dir: string,
): Promise<{ tarball: string; files: string[]; unpackedSize: number }> {
  const checkout = join(dir, 'checkout');
  mkdirSync(checkout);
  const copied = [
    'package.json',
    'README.md',
    'LICENSE',
    'src',
    'scripts',
    'testing',
    'opentelemetry',
    'node-cron',
    'nestjs',
  ];
  for (const entry of copied) {
    cpSync(join(REPO, entry), join(checkout, entry), { recursive: true });
  }
  for (const entry of ['tsconfig.json', 'tsconfig.build.json']) {
    cpSync(join(REPO, entry), join(checkout, entry));
  }
  symlinkSync(join(REPO, 'node_modules'), join(checkout, 'node_modules'));
  const [packed] = JSON.parse(
    await npm(checkout, ['pack', '--json', '--pack-destination', dir]),
  ) as {
    filename: string;
    files: { path: string }[];
    unpackedSize: number;
  }[];
  if (!packed) throw new Error('npm pack listed no package');
  return {
    tarball: join(dir, packed.filename),
    files: packed.files.map((f) => f.path),
    unpackedSize: packed.unpackedSize,
  };
}

/**
 * The first half of a consumer project in `dir`, which needs no tarball (so it can be set up
 * while distlock is being packed): a project with ioredis `ioredisVersion` (and node-redis,
 * valkey-glide, the OpenTelemetry API, node-cron, NestJS, fengari and fake timers, which the
 * documented examples use, and
 * with `latestTypeScript` npm's `latest` TypeScript as `typescript-latest`), as a
 * service that already has its Redis client and adds distlock, holding the examples of the
 * README, docs/ and bench/README.md under readme/ and the fixtures of test/consumers.
 */
export async function consumerProject(
  dir: string,
  ioredisVersion: string,
  { latestTypeScript = false } = {},
): Promise<void> {
  mkdirSync(join(dir, 'readme'), { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
  );
  await npm(dir, [
    'install',
    '--prefer-offline',
    `ioredis@${ioredisVersion}`,
    `redis@${installed('redis')}`,
    `@valkey/valkey-glide@${installed('@valkey/valkey-glide')}`,
    `@opentelemetry/api@${installed('@opentelemetry/api')}`,
    `node-cron@${installed('node-cron')}`,
    // InMemoryRedis's Lua VM, and fake timers, as a unit-testing project has them.
    ...['fengari', '@sinonjs/fake-timers', '@types/sinonjs__fake-timers'].map(
      (name) => `${name}@${installed(name)}`,
    ),
    ...['@nestjs/common', '@nestjs/core', '@nestjs/schedule', 'reflect-metadata', 'rxjs'].map(
      (name) => `${name}@${installed(name)}`,
    ),
    `typescript@${installed('typescript')}`,
    `@types/node@${installed('@types/node')}`,
    // npm's `latest` TypeScript beside the repository's, as `typescript-latest`.
    ...(latestTypeScript ? ['typescript-latest@npm:typescript@latest'] : []),
  ]);
  for (const file of [
    'readme-globals.d.ts',
    'consumer.cts',
    'tsconfig.node16.json',
    'tsconfig.bundler.json',
    'tsconfig.node10.json',
    'tsconfig.defaults.json',
    'testing-only.mts',
  ]) {
    cpSync(join(FIXTURES, file), join(dir, file));
  }
  for (const example of documentationExamples()) {
    // `export {}` makes each block a module of its own (top-level await, no shared names).
    writeFileSync(join(dir, exampleFile(example)), `${example.code}\nexport {};\n`);
  }
}

/** The second half: installs distlock from `tarball` into the project `consumerProject` made. */
export async function installTarball(dir: string, tarball: string): Promise<void> {
  await npm(dir, ['install', '--prefer-offline', tarball]);
}

/** The ioredis version the repository tests as "ioredis 6" (its `ioredis6` alias). */
export const IOREDIS_6 = installed('ioredis6');
/** The ioredis version the repository builds against. */
export const IOREDIS_5 = installed('ioredis');
/** The oldest ioredis the peer dependency range allows (the first with a named `Redis` export). */
export const IOREDIS_OLDEST = '5.3.0';
