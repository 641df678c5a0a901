// Named apart: bundles often declare `createRequire` in a banner of their own.
import { createRequire as requireFrom } from 'node:module';
import type * as IORedis from 'ioredis';
import { MissingLibraryError } from '../errors.js';

/**
 * Packages distlock uses on some paths only, loaded when a path first needs them, so that
 * `import 'distlock'` costs what the caller uses: ioredis (an optional peer: only `redis://`
 * URLs and the command line need it), cluster-key-slot (Redis Cluster) and croner
 * (`schedule`). Loaded synchronously (each has a CommonJS build), so that the calls that need
 * them (`new Locker`, `schedule`) stay synchronous and still reject bad input before any I/O.
 *
 * Each is a literal `require('name')` where the module system has `require` (CommonJS, and
 * a bundler, which then sees the package and bundles it), else one made for this file.
 */
let nodeRequire: NodeJS.Require | undefined;
const required = (name: string): unknown => {
  nodeRequire ??= requireFrom(import.meta.url);
  return nodeRequire(name);
};

let ioredis: typeof IORedis | undefined;
let calculateSlot: ((key: string) => number) | undefined;

/**
 * The ioredis module; throws {@link MissingLibraryError} (saying what needed it, `purpose`,
 * and what else the caller may do, `instead`) when it is not installed.
 */
export function ioredisLibrary(purpose: string, instead?: string): typeof IORedis {
  if (ioredis) return ioredis;
  try {
    ioredis = (
      typeof require === 'function' ? require('ioredis') : required('ioredis')
    ) as typeof IORedis;
  } catch (cause) {
    if (!notFound(cause, 'ioredis')) throw cause;
    throw new MissingLibraryError('ioredis', purpose, { cause, ...(instead ? { instead } : {}) });
  }
  return ioredis;
}

/** The Redis Cluster hash slot (0 to 16383) of `key`, by its `{hash tag}` when it has one. */
export function keySlot(key: string): number {
  calculateSlot ??= (
    typeof require === 'function' ? require('cluster-key-slot') : required('cluster-key-slot')
  ) as (key: string) => number;
  return calculateSlot(key);
}

/** The croner module (cron expressions and their timers), for `schedule`. */
export function cronerLibrary(): typeof import('croner') {
  return (
    typeof require === 'function' ? require('croner') : required('croner')
  ) as typeof import('croner');
}

/** Whether `error` says that `name` itself (not one of its own dependencies) is missing. */
function notFound(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(`'${name}'`)
  );
}
