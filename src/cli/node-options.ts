import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { TlsOptions } from '../config/node-specs.js';
import { InvalidArgumentError } from '../errors.js';
import { type AddressList, addressList } from './node-addresses.js';

/**
 * Where the nodes came from, as the user named them: the options (`--redis`, `--cluster,
 * --sentinel`) or the variables (`DISTLOCK_REDIS`), or `default` (localhost).
 */
export type NodesFrom = 'default' | (string & {});

/** A Redis Cluster, one lock node, given by its seeds (`--cluster`). */
export type ClusterNode = AddressList;

/** A master that Sentinel follows, one lock node (`--sentinel`, `--master-name`). */
export interface SentinelNode extends AddressList {
  readonly masterName: string;
}

/** How the command line names one node, for messages: `--redis #2`, `$DISTLOCK_REDIS entry 2`. */
export interface NodeOrigin {
  /** The option or variable, as an error about the node names it. */
  readonly option: string;
  /** The node among the others the option or variable gave. */
  readonly entry: string;
  /** What was given for it (passwords not masked yet). */
  readonly given: string;
}

/**
 * The nodes a command locks on, and the TLS settings for its `rediss://` ones. The locker
 * gets them in this order: the URLs, then the clusters, then the Sentinel groups.
 */
export interface NodeOptions {
  /** Single servers (`--redis`). */
  readonly nodes: readonly string[];
  readonly clusters?: readonly ClusterNode[];
  readonly sentinels?: readonly SentinelNode[];
  readonly tls?: TlsOptions;
  readonly from: NodesFrom;
  /** How the command line named each node, in the locker's order. */
  readonly origins?: readonly NodeOrigin[];
}

/** The node of a command given no node option and no node variable. */
export const DEFAULT_NODE = 'redis://127.0.0.1:6379';

const collect = (value: string, previous: string[]) => [...previous, value];

/**
 * Adds the node options to `command`: `--redis`, `--cluster` and `--sentinel` (each
 * repeatable, each occurrence one lock node), `--master-name`, and the `--tls-*` options.
 */
export function withNodeOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--redis <url>', 'a Redis node; repeat it for Redlock over several')
        .argParser(collect)
        .default([], `$DISTLOCK_REDIS, else ${DEFAULT_NODE}`),
    )
    .addOption(
      new Option(
        '--cluster <seeds>',
        'a Redis Cluster: comma-separated seed nodes (host:port or URLs)',
      )
        .argParser(collect)
        .default([], '$DISTLOCK_CLUSTER'),
    )
    .addOption(
      new Option(
        '--sentinel <addresses>',
        'a master that Sentinel follows: comma-separated sentinels',
      )
        .argParser(collect)
        .default([], '$DISTLOCK_SENTINEL'),
    )
    .option(
      '--master-name <name>',
      'the name the sentinels know the master by ($DISTLOCK_MASTER_NAME)',
    )
    .option('--tls-ca <file>', 'CA certificate (PEM) to trust for rediss:// nodes')
    .option('--tls-cert <file>', 'client certificate (PEM), for servers that require one')
    .option('--tls-key <file>', "the client certificate's private key (PEM)")
    .option('--tls-servername <name>', "the name the servers' certificates carry");
}

/**
 * The nodes given on the command line (`--redis`, `--cluster`, `--sentinel`), else by
 * `$DISTLOCK_REDIS` (URLs, comma- or space-separated), `$DISTLOCK_CLUSTER` and
 * `$DISTLOCK_SENTINEL` (space-separated groups of comma-separated addresses), else localhost;
 * and the TLS settings. Bad input (an address, a missing `--master-name`, a certificate file
 * that cannot be read) is an `InvalidArgumentError` naming its option, before any I/O.
 */
export function nodeOptions(opts: Record<string, unknown>): NodeOptions {
  const given = {
    redis: opts.redis as string[],
    cluster: (opts.cluster as string[] | undefined) ?? [],
    sentinel: (opts.sentinel as string[] | undefined) ?? [],
  };
  const onCommandLine = Object.values(given).some((list) => list.length > 0);
  const fromEnv = {
    redis: variable('DISTLOCK_REDIS', /[\s,]+/),
    cluster: variable('DISTLOCK_CLUSTER', /\s+/),
    sentinel: variable('DISTLOCK_SENTINEL', /\s+/),
  };
  const inEnvironment = Object.values(fromEnv).some((list) => list.length > 0);
  const source = onCommandLine ? given : inEnvironment ? fromEnv : undefined;
  const name = (kind: keyof typeof given) =>
    onCommandLine ? `--${kind}` : `DISTLOCK_${kind.toUpperCase()}`;
  // `--redis #2` in a message, the option as `--redis`; `$DISTLOCK_REDIS entry 2` for both.
  const origin =
    (kind: keyof typeof given) =>
    (text: string, index: number): NodeOrigin => {
      const entry = onCommandLine
        ? `${name(kind)} #${index + 1}`
        : `$${name(kind)} entry ${index + 1}`;
      return { option: onCommandLine ? name(kind) : entry, entry, given: text };
    };
  const nodes = source?.redis ?? (source ? [] : [DEFAULT_NODE]);
  const clusters = (source?.cluster ?? []).map((text, index) =>
    addressList(origin('cluster')(text, index).option, text, { defaultPort: 6379, tls: true }),
  );
  const sentinels = sentinelNodes(source?.sentinel ?? [], origin('sentinel'), opts.masterName);
  const origins = [
    ...(source?.redis ?? []).map(origin('redis')),
    ...(source?.cluster ?? []).map(origin('cluster')),
    ...(source?.sentinel ?? []).map(origin('sentinel')),
  ];
  const from = source
    ? (['redis', 'cluster', 'sentinel'] as const)
        .filter((kind) => source[kind].length > 0)
        .map(name)
        .join(', ')
    : 'default';
  const tls = tlsOptions(opts);
  return {
    nodes,
    ...(clusters.length > 0 ? { clusters } : {}),
    ...(sentinels.length > 0 ? { sentinels } : {}),
    ...(tls ? { tls } : {}),
    from,
    origins,
  };
}

function variable(name: string, separator: RegExp): string[] {
  return (process.env[name] ?? '').split(separator).filter(Boolean);
}

function sentinelNodes(
  texts: readonly string[],
  origin: (text: string, index: number) => NodeOrigin,
  option: unknown,
): SentinelNode[] {
  const masterName = typeof option === 'string' ? option : process.env.DISTLOCK_MASTER_NAME;
  if (typeof option === 'string' && texts.length === 0) {
    throw new InvalidArgumentError('--master-name', 'given only with --sentinel', option);
  }
  if (texts.length === 0) return [];
  if (masterName === undefined || masterName === '') {
    const expected =
      'given with --sentinel (or $DISTLOCK_MASTER_NAME): the name the sentinels know the master by';
    throw new InvalidArgumentError('--master-name', expected, masterName);
  }
  return texts.map((text, index) => ({
    ...addressList(origin(text, index).option, text, { defaultPort: 26379, tls: false }),
    masterName,
  }));
}

function tlsOptions(opts: Record<string, unknown>): TlsOptions | undefined {
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
  return Object.keys(tls).length > 0 ? tls : undefined;
}

function readPem(option: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new InvalidArgumentError(option, 'a readable PEM file', `${file} (${why})`);
  }
}
