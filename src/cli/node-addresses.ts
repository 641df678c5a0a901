import { maskedUrl } from '../config/node-specs.js';
import { InvalidArgumentError } from '../errors.js';

/** A server to connect to first: a Cluster seed or a sentinel. */
export interface Address {
  readonly host: string;
  readonly port: number;
}

/** Servers given together (one `--cluster` or `--sentinel`), and what they share. */
export interface AddressList {
  readonly addresses: readonly Address[];
  readonly username?: string;
  readonly password?: string;
  /** Whether they are `rediss://` ones (TLS). */
  readonly tls: boolean;
}

/**
 * Parses `text`, comma-separated `host:port` or `redis://[user:password@]host:port` addresses
 * (`rediss://` for TLS), as `option` gives them: all with the same scheme and credentials,
 * no database, no duplicate. Anything else is an `InvalidArgumentError` naming `option`,
 * echoing the value without its password.
 */
export function addressList(
  option: string,
  text: string,
  { defaultPort, tls: allowTls }: { defaultPort: number; tls: boolean },
): AddressList {
  const forTls = allowTls ? ', rediss:// for TLS' : '';
  const expected = `comma-separated addresses (host:port, or redis://[user:password@]host:port${forTls})`;
  const fail = (why: string): never => {
    throw new InvalidArgumentError(option, `${expected}${why}`, maskedUrl(text));
  };
  const entries = text.split(',').map((entry) => entry.trim());
  if (entries.some((entry) => entry === '')) fail('');
  const parsed = entries.map((entry) => parseAddress(entry) ?? fail(''));
  const [first] = parsed;
  if (first === undefined) return fail('');
  if (!allowTls && first.tls) fail(' (TLS to sentinels is not supported here)');
  for (const other of parsed) {
    if (other.tls !== first.tls) fail(', all with the same scheme');
    if (other.username !== first.username || other.password !== first.password) {
      fail(', all with the same user and password');
    }
  }
  const addresses = parsed.map(({ host, port }) => ({ host, port: port ?? defaultPort }));
  const names = addresses.map(({ host, port }) => `${host}:${port}`);
  if (new Set(names).size < names.length) fail(', each listed once');
  const { username, password } = first;
  return {
    addresses,
    tls: first.tls,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
  };
}

function parseAddress(entry: string):
  | {
      host: string;
      port: number | undefined;
      tls: boolean;
      username: string;
      password: string;
    }
  | undefined {
  const url = /^[a-z][\w+.-]*:\/\//i.test(entry) ? entry : `redis://${entry}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (!/^rediss?:$/.test(parsed.protocol) || parsed.hostname === '') return undefined;
  if (!(parsed.pathname === '' || parsed.pathname === '/') || parsed.search || parsed.hash) {
    return undefined;
  }
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? undefined : Number(parsed.port),
    tls: parsed.protocol === 'rediss:',
    username: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  };
}
