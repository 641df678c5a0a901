import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

const npm = (cwd: string, args: string[]) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    encoding: 'utf8',
  });

/**
 * Packs distlock the way a fresh clone publishes it: in a copy of the sources without dist/,
 * so that only `prepack` can build what the tarball holds. Returns the tarball's path and
 * the files it lists.
 */
export function packFreshCheckout(dir: string): { tarball: string; files: string[] } {
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
  ];
  for (const entry of copied) {
    cpSync(join(REPO, entry), join(checkout, entry), { recursive: true });
  }
  for (const entry of ['tsconfig.json', 'tsconfig.build.json']) {
    cpSync(join(REPO, entry), join(checkout, entry));
  }
  symlinkSync(join(REPO, 'node_modules'), join(checkout, 'node_modules'));
  const [packed] = JSON.parse(npm(checkout, ['pack', '--json', '--pack-destination', dir])) as {
    filename: string;
    files: { path: string }[];
  }[];
  if (!packed) throw new Error('npm pack listed no package');
  return { tarball: join(dir, packed.filename), files: packed.files.map((f) => f.path) };
}

/**
 * A consumer project in `dir` that installs the tarball with ioredis `ioredisVersion` (and
 * node-redis, valkey-glide and the OpenTelemetry API, which the documented examples use), holding
 * the examples of the README, docs/ and bench/README.md under readme/ and the fixtures of
 * test/consumers.
 */
export function consumerProject(dir: string, tarball: string, ioredisVersion: string): void {
  mkdirSync(join(dir, 'readme'), { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
  );
  npm(dir, [
    'install',
    '--prefer-offline',
    tarball,
    `ioredis@${ioredisVersion}`,
    `redis@${installed('redis')}`,
    `@valkey/valkey-glide@${installed('@valkey/valkey-glide')}`,
    `@opentelemetry/api@${installed('@opentelemetry/api')}`,
    `typescript@${installed('typescript')}`,
    `@types/node@${installed('@types/node')}`,
  ]);
  for (const file of [
    'readme-globals.d.ts',
    'consumer.cts',
    'tsconfig.node16.json',
    'tsconfig.bundler.json',
    'tsconfig.node10.json',
  ]) {
    cpSync(join(FIXTURES, file), join(dir, file));
  }
  for (const example of documentationExamples()) {
    // `export {}` makes each block a module of its own (top-level await, no shared names).
    writeFileSync(join(dir, exampleFile(example)), `${example.code}\nexport {};\n`);
  }
}

/** The ioredis version the repository tests as "ioredis 6" (its `ioredis6` alias). */
export const IOREDIS_6 = installed('ioredis6');
/** The ioredis version the repository builds against. */
export const IOREDIS_5 = installed('ioredis');
/** The oldest ioredis the peer dependency range allows (the first with a named `Redis` export). */
export const IOREDIS_OLDEST = '5.3.0';
