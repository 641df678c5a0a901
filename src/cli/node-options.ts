import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { TlsOptions } from '../config/node-specs.js';
import { InvalidArgumentError } from '../errors.js';

/** Where the nodes came from: `--redis`, `$DISTLOCK_REDIS`, or neither (localhost). */
export type NodesFrom = '--redis' | 'DISTLOCK_REDIS' | 'default';

/** The nodes a command locks on, and the TLS settings for its `rediss://` ones. */
export interface NodeOptions {
  readonly nodes: readonly string[];
  readonly tls?: TlsOptions;
  readonly from: NodesFrom;
}

/** The node of a command given no `--redis` and no `$DISTLOCK_REDIS`. */
export const DEFAULT_NODE = 'redis://127.0.0.1:6379';

const collect = (value: string, previous: string[]) => [...previous, value];

/** Adds `--redis` (repeatable) and the `--tls-*` options to `command`. */
export function withNodeOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--redis <url>', 'a Redis node; repeat it for Redlock over several')
        .argParser(collect)
        .default([], `$DISTLOCK_REDIS, else ${DEFAULT_NODE}`),
    )
    .option('--tls-ca <file>', 'CA certificate (PEM) to trust for rediss:// nodes')
    .option('--tls-cert <file>', 'client certificate (PEM), for servers that require one')
    .option('--tls-key <file>', "the client certificate's private key (PEM)")
    .option('--tls-servername <name>', "the name the servers' certificates carry");
}

/**
 * The nodes (`--redis`, else `$DISTLOCK_REDIS`, comma- or space-separated, else localhost)
 * and TLS settings given on the command line; a certificate file that cannot be read is an
 * `InvalidArgumentError` naming its option.
 */
export function nodeOptions(opts: Record<string, unknown>): NodeOptions {
  const given = opts.redis as string[];
  const fromEnv = (process.env.DISTLOCK_REDIS ?? '').split(/[\s,]+/).filter(Boolean);
  const [nodes, from]: [string[], NodesFrom] =
    given.length > 0
      ? [given, '--redis']
      : fromEnv.length > 0
        ? [fromEnv, 'DISTLOCK_REDIS']
        : [[DEFAULT_NODE], 'default'];
  const tls: { -readonly [K in keyof TlsOptions]: TlsOptions[K] } = {};
  for (const [field, flag] of [
    ['ca', 'tlsCa'],
    ['cert', 'tlsCert'],
    ['key', 'tlsKey'],
  ] as const) {
    const file = opts[flag];
    if (typeof file === 'string') tls[field] = readPem(`--tls-${field}`, file);
  }
  if (typeof opts.tlsServername === 'string') tls.servername = opts.tlsServername;
  return Object.keys(tls).length > 0 ? { nodes, tls, from } : { nodes, from };
}

function readPem(option: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new InvalidArgumentError(option, 'a readable PEM file', `${file} (${why})`);
  }
}
