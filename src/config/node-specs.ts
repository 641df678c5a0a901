import {
  adaptClient,
  isClusterClient,
  isRedisConnection,
  lockerConnection,
  type RedisClient,
} from '../driver/clients.js';
import type { RedisConnection } from '../driver/connection.js';
import { IORedisConnection } from '../driver/ioredis.js';
import { clusterName, isIORedisClusterLike } from '../driver/ioredis-cluster.js';
import { InvalidArgumentError } from '../errors.js';
import { namesOf, rejectUnknownOptions } from './option-names.js';

/** A Redis node: a `redis://` / `rediss://` URL, a Redis client, or a custom connection. */
export type NodeSpec = string | RedisClient | RedisConnection;

/**
 * TLS settings for the `rediss://` nodes a locker connects to itself (clients you pass in
 * bring their own). PEM text or Buffers, as Node's `tls.connect` takes them.
 */
export interface TlsOptions {
  /** Certificate authorities to trust (a private CA, a self-signed server certificate). */
  readonly ca?: string | Buffer;
  /** Client certificate, for servers that require one (`tls-auth-clients yes`). */
  readonly cert?: string | Buffer;
  /** The client certificate's private key. */
  readonly key?: string | Buffer;
  /** The name the server's certificate must carry, when it differs from the URL's host. */
  readonly servername?: string;
}

const TLS_OPTIONS = namesOf<TlsOptions>({ ca: true, cert: true, key: true, servername: true });

/** The connections of a locker, and which of them it opened itself (and so must close). */
export interface ResolvedNodes {
  readonly connections: readonly RedisConnection[];
  readonly owned: readonly RedisConnection[];
}

/**
 * Checks every node spec (and `tls`) synchronously (a bad one throws before any connection
 * is opened), then wraps clients and opens connections for URLs, with `tls` for `rediss://`.
 */
export function resolveNodes(specs: unknown, tls?: unknown, replicaAcks = 0): ResolvedNodes {
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new InvalidArgumentError('nodes', 'a non-empty array of Redis URLs or clients', specs);
  }
  const seen = new Map<unknown, number>();
  specs.forEach((spec: unknown, index) => {
    const field = `nodes[${index}]`;
    if (replicaAcks > 0 && isClusterClient(spec)) {
      // WAIT has no key: sent to a cluster, it would not reach the master that took the lock.
      throw new InvalidArgumentError(
        'replicaAcks',
        `0 when a node is a Redis Cluster (${field}): not supported there yet`,
        replicaAcks,
      );
    }
    const identity =
      typeof spec === 'string' ? urlNodeName(field, spec) : objectIdentity(field, spec);
    const name = typeof identity === 'string' ? sameHost(identity) : undefined;
    for (const key of name === undefined ? [spec] : [spec, name]) {
      const earlier = seen.get(key);
      if (earlier !== undefined) {
        throw new InvalidArgumentError(
          field,
          `a node not listed before (same as nodes[${earlier}]; a duplicate would inflate the quorum)`,
          spec,
        );
      }
      seen.set(key, index);
    }
  });
  const secure = validateTls(tls, specs);
  const connections: RedisConnection[] = [];
  const owned: RedisConnection[] = [];
  for (const spec of specs as NodeSpec[]) {
    if (typeof spec === 'string') {
      const connection = IORedisConnection.fromUrl(
        spec,
        spec.startsWith('rediss:') ? secure : undefined,
      );
      connections.push(connection);
      owned.push(connection);
    } else {
      const adapted = lockerConnection(spec);
      connections.push(adapted?.connection ?? (spec as RedisConnection));
      if (adapted?.opened) owned.push(adapted.connection);
    }
  }
  return { connections, owned };
}

function validateTls(tls: unknown, specs: readonly unknown[]): TlsOptions | undefined {
  if (tls === undefined) return undefined;
  if (typeof tls !== 'object' || tls === null) {
    throw new InvalidArgumentError('tls', 'an object with ca, cert, key or servername', tls);
  }
  rejectUnknownOptions(tls, TLS_OPTIONS, 'tls', { path: 'tls.' });
  for (const [field, value] of Object.entries(tls)) {
    if (!(typeof value === 'string' || Buffer.isBuffer(value))) {
      throw new InvalidArgumentError(
        `tls.${field}`,
        'PEM text or a Buffer (ca, cert, key) or a name (servername)',
        value,
      );
    }
  }
  if (!specs.some((spec) => typeof spec === 'string' && spec.startsWith('rediss:'))) {
    throw new InvalidArgumentError('tls', 'given only with rediss:// nodes', 'no rediss:// node');
  }
  return tls as TlsOptions;
}

/** `localhost` and the loopback addresses name the same node, for duplicate detection. */
function sameHost(name: string): string {
  return name.replace(/^(localhost|::1|\[::1\]):/, '127.0.0.1:');
}

function urlNodeName(field: string, url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    // reported below
  }
  // A host is required: `redis:/u:pw@host` parses with the password in its path, which the
  // client would then use as a socket path (and print in its connection errors).
  const valid = /^rediss?:\/\//.test(url) && parsed !== undefined && parsed.host !== '';
  if (!valid || parsed === undefined) {
    throw new InvalidArgumentError(
      field,
      'a redis:// or rediss:// URL with a host',
      maskedUrl(url),
    );
  }
  const db = Number(parsed.pathname.slice(1) || 0);
  const where = `${parsed.hostname || 'localhost'}:${parsed.port || 6379}`;
  return db ? `${where}/${db}` : where;
}

/**
 * `url` with everything between `[scheme://]user:` and the last `@` as `***`: for echoing a
 * URL that may not parse, so that its password cannot be told apart from the rest.
 */
export function maskedUrl(url: string): string {
  return url.replace(/^((?:[^:/@]*:\/\/)?[^:/@]*:).*@/s, '$1***@');
}

function objectIdentity(field: string, spec: unknown): string | object {
  if (isIORedisClusterLike(spec)) return clusterName(spec); // no listeners on the caller's
  const connection = adaptClient(spec) ?? (isRedisConnection(spec) ? spec : undefined);
  if (connection) return connection.name;
  throw new InvalidArgumentError(field, 'a Redis URL, a Redis client or a RedisConnection', spec);
}
