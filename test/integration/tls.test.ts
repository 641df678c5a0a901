import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEME_CHECK_TIMEOUT_MS, TLS_HANDSHAKE_WAIT_MS } from '../../src/driver/tls-scheme.js';
import {
  Locker,
  type NodeSpec,
  NoQuorumError,
  type TlsOptions,
  TlsSchemeError,
} from '../../src/index.js';
import { FaultProxy, type RedisNodes, startRedis } from '../../src/testing/index.js';
import { freePort } from '../../src/testing/ports.js';

const dir = mkdtempSync(join(tmpdir(), 'distlock-tls-'));
const file = (name: string) => join(dir, name);
const pem = (name: string) => readFileSync(file(name), 'utf8');

/** A private CA, a server certificate for 127.0.0.1 and a client certificate, by openssl. */
function makeCertificates(): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...key,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=distlock test CA',
  );
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  for (const who of ['server', 'client']) {
    openssl(
      'req',
      ...key,
      '-keyout',
      file(`${who}.key`),
      '-out',
      file(`${who}.csr`),
      '-subj',
      `/CN=${who}`,
    );
    const extension = who === 'server' ? ['-extfile', file('server.ext')] : [];
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${who}.csr`),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-out',
      file(`${who}.crt`),
      '-days',
      '2',
      ...extension,
    );
  }
}

/** A node serving TLS on its own port; `clients`: whether it requires a client certificate. */
async function tlsNode(clients: 'optional' | 'yes'): Promise<{ redis: RedisNodes; url: string }> {
  const port = await freePort();
  const redis = await startRedis({
    args: [
      '--tls-port',
      String(port),
      '--tls-cert-file',
      file('server.crt'),
      '--tls-key-file',
      file('server.key'),
      '--tls-ca-cert-file',
      file('ca.crt'),
      '--tls-auth-clients',
      clients,
    ],
  });
  return { redis, url: `rediss://127.0.0.1:${port}` };
}

let optional: { redis: RedisNodes; url: string };
let mutual: { redis: RedisNodes; url: string };
const lockers: Locker[] = [];
beforeAll(async () => {
  makeCertificates();
  [optional, mutual] = await Promise.all([tlsNode('optional'), tlsNode('yes')]);
});
afterAll(async () => {
  await Promise.all(lockers.map((l) => l.close()));
  await Promise.all([optional?.redis.stop(), mutual?.redis.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

function lockerOn(url: NodeSpec, tls?: TlsOptions): Locker {
  const locker = new Locker({ nodes: [url], ...(tls ? { tls } : {}) });
  lockers.push(locker);
  return locker;
}

/** The error of an acquisition (5 s wait by default), how long it took, and the node's cause. */
async function failure(
  locker: Locker,
  waitMs = 5_000,
): Promise<{ message: string; ms: number; cause: unknown }> {
  const started = performance.now();
  const error = await locker.acquire('r', { ttlMs: 5_000, waitMs }).catch((e) => e);
  expect(error).toBeInstanceOf(NoQuorumError);
  const node = (error as NoQuorumError).nodes[0];
  const cause = node?.outcome === 'error' ? node.error.cause : undefined;
  return { message: (error as Error).message, ms: performance.now() - started, cause };
}

describe('rediss:// nodes', () => {
  it('trust a private CA given as tls.ca', async () => {
    const lock = await lockerOn(optional.url, { ca: pem('ca.crt') }).acquire('r', { ttlMs: 5_000 });
    expect(await lock.release()).toBe('released');
  });

  it('without it, fail at once naming the certificate problem', async () => {
    const { message, ms } = await failure(lockerOn(optional.url));
    expect(message).toMatch(/self[- ]signed certificate in certificate chain/);
    expect(ms).toBeLessThan(2_500); // not the whole 5 s wait
  });

  it('fail at once when the certificate is for another name', async () => {
    const { message, ms } = await failure(
      lockerOn(optional.url, { ca: pem('ca.crt'), servername: 'other.example' }),
    );
    expect(message).toMatch(/altnames|does not match/i);
    expect(ms).toBeLessThan(2_500);
  });

  it('present a client certificate to a server that requires one (mTLS)', async () => {
    const { message } = await failure(lockerOn(mutual.url, { ca: pem('ca.crt') }));
    // The server's alert, or (when the client wrote before reading it) the reset it caused,
    // with the hint.
    expect(message).toMatch(/certificate required|requires a client certificate, give tls\.cert/);
    const tls = { ca: pem('ca.crt'), cert: pem('client.crt'), key: pem('client.key') };
    const lock = await lockerOn(mutual.url, tls).acquire('r', { ttlMs: 5_000 });
    expect(await lock.release()).toBe('released');
  });

  it('reject tls options without a rediss:// node, before connecting', () => {
    expect(() => new Locker({ nodes: ['redis://127.0.0.1:1'], tls: { ca: 'x' } })).toThrow(/`tls`/);
  });
});

/**
 * How long a scheme mix-up takes to be named: a stalled handshake is waited for, the check
 * waits for the server, with as much again for the connection attempts around them (the
 * acquisition would otherwise wait its whole 5 s).
 */
const MIX_UP_NAMED_WITHIN_MS = 2 * (TLS_HANDSHAKE_WAIT_MS + SCHEME_CHECK_TIMEOUT_MS);

describe('a scheme mix-up', () => {
  const speaksTls = /; likely cause: the server speaks TLS: use rediss:\/\//;
  const speaksPlain =
    /; likely cause: the server does not speak TLS \(plain port\?\): use redis:\/\//;
  const tlsPort = () => new URL(optional.url).port;
  const plainPort = () => optional.redis.nodes[0]?.port;

  /** The acquisition fails fast, names the mix-up, and carries a {@link TlsSchemeError}. */
  async function namesMixUp(node: NodeSpec, tls: TlsOptions | undefined, hint: RegExp) {
    const { message, ms, cause } = await failure(lockerOn(node, tls));
    expect(message).toMatch(hint);
    expect(cause).toBeInstanceOf(TlsSchemeError);
    expect(ms).toBeLessThan(MIX_UP_NAMED_WITHIN_MS);
  }

  it('redis:// at a TLS port says the server speaks TLS, within a second', async () => {
    await namesMixUp(`redis://127.0.0.1:${tlsPort()}`, undefined, speaksTls);
  });

  it('rediss:// at a plain port says the server does not speak TLS', async () => {
    await namesMixUp(`rediss://127.0.0.1:${plainPort()}`, { ca: pem('ca.crt') }, speaksPlain);
  });

  it('is named for ioredis and node-redis clients passed in', async () => {
    const ioredis = [
      new Redis(`redis://127.0.0.1:${tlsPort()}`),
      new Redis(`rediss://127.0.0.1:${plainPort()}`, { tls: { ca: pem('ca.crt') } }),
    ];
    const nodeRedis = [
      createClient({ url: `redis://127.0.0.1:${tlsPort()}` }),
      createClient({
        url: `rediss://127.0.0.1:${plainPort()}`,
        socket: { tls: true, ca: pem('ca.crt') },
      }),
    ];
    for (const client of ioredis) client.on('error', () => {});
    for (const client of nodeRedis) {
      client.on('error', () => {});
      client.connect().catch(() => undefined); // never settles while the scheme is wrong
    }
    try {
      await namesMixUp(ioredis[0] as NodeSpec, undefined, speaksTls);
      await namesMixUp(ioredis[1] as NodeSpec, undefined, speaksPlain);
      await namesMixUp(nodeRedis[0] as NodeSpec, undefined, speaksTls);
      await namesMixUp(nodeRedis[1] as NodeSpec, undefined, speaksPlain);
    } finally {
      for (const client of ioredis) client.disconnect();
      for (const client of nodeRedis) client.destroy();
    }
  });

  it('is not blamed for a network that resets or drops connections', async () => {
    const ports = [plainPort() ?? 0, Number(tlsPort()), Number(tlsPort())];
    const proxies = await Promise.all(ports.map((port) => FaultProxy.start(port)));
    const [reset, tlsReset, silent] = proxies.map((proxy) => `127.0.0.1:${proxy.port}`);
    proxies[0]?.set({ mode: 'reset' });
    proxies[1]?.set({ mode: 'reset' });
    proxies[2]?.set({ mode: 'blackhole' }); // a TLS handshake that nothing answers
    try {
      // Waiting as long as a mix-up takes to be named.
      const failures = await Promise.all([
        failure(lockerOn(`redis://${reset}`), MIX_UP_NAMED_WITHIN_MS),
        failure(lockerOn(`rediss://${tlsReset}`, { ca: pem('ca.crt') }), MIX_UP_NAMED_WITHIN_MS),
        failure(lockerOn(`rediss://${silent}`, { ca: pem('ca.crt') }), MIX_UP_NAMED_WITHIN_MS),
      ]);
      for (const { message, cause } of failures) {
        expect(message).not.toMatch(/likely cause/);
        expect(cause).not.toBeInstanceOf(TlsSchemeError);
      }
      expect(failures[0]?.message).toMatch(/ECONNRESET/);
    } finally {
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });
});

/** A TLS application-data record (TLS 1.2 framing, 32 bytes) that does not decrypt. */
const UNDECRYPTABLE = Buffer.from([0x17, 0x03, 0x03, 0x00, 0x20, ...Array(32).fill(7)]);

/**
 * A relay to `port` that fails its connections as a broken TLS peer does: `garble` sends
 * each client a record that does not decrypt (its OpenSSL fails on it), `reset` resets them.
 */
async function garblingRelay(port: number) {
  const clients = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    clients.add(client);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.on('close', () => {
      clients.delete(client);
      upstream.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    garble: () => {
      for (const client of clients) client.write(UNDECRYPTABLE);
    },
    reset: () => {
      for (const client of clients) client.resetAndDestroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('a TLS connection that fails twice', () => {
  it('never lets its second error escape as an uncaught exception', async () => {
    const relay = await garblingRelay(Number(new URL(optional.url).port));
    const uncaught: Error[] = [];
    let onUncaught: (error: Error) => void = () => {};
    const escaped = new Promise<void>((resolve) => {
      onUncaught = (error) => {
        uncaught.push(error);
        resolve();
      };
      process.on('uncaughtException', onUncaught);
    });
    const client = new Redis(`rediss://127.0.0.1:${relay.port}`, {
      tls: { ca: pem('ca.crt') },
      retryStrategy: () => null, // one connection, so that its end is awaited
    });
    try {
      const lock = await lockerOn(client as NodeSpec).acquire('r', { ttlMs: 5_000 });
      expect(await lock.release()).toBe('released');
      const firstError = once(client, 'error');
      relay.garble(); // Node emits the OpenSSL failure at once, not through destroy()...
      const [error] = (await firstError) as [NodeJS.ErrnoException];
      expect(error.code).toMatch(/^ERR_SSL_/);
      relay.reset(); // ...so the reset that follows is emitted as a second error.
      await Promise.race([once(client, 'end'), escaped]);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      client.disconnect();
      await relay.close();
    }
  });
});

describe('the distlock command on rediss:// nodes', () => {
  /** Runs the built CLI (`npm test` builds it first): its exit code and all it printed. */
  const cli = (...args: string[]) =>
    new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, ['dist/esm/cli/main.js', ...args]);
      let output = '';
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.once('exit', (code) => resolve({ code, output }));
    });

  it('takes the CA and the client certificate as --tls-* files (mTLS)', async () => {
    const certificates = ['--tls-ca', file('ca.crt'), '--tls-cert', file('client.crt')];
    const run = ['run', '--key', 'job', '--redis', mutual.url, ...certificates];
    expect(await cli(...run, '--tls-key', file('client.key'), '--', 'true')).toMatchObject({
      code: 0,
    });
    const withoutKey = await cli(...run, '--', 'true');
    expect(withoutKey.code).toBe(69);
    expect(withoutKey.output).toMatch(/certificate required/);
  });

  it('names a scheme mix-up', async () => {
    const tlsPort = new URL(optional.url).port;
    const plain = await cli('status', 'job', '--redis', `redis://127.0.0.1:${tlsPort}`);
    expect(plain.code).toBe(69);
    expect(plain.output).toMatch(/likely cause: the server speaks TLS: use rediss:\/\//);
    const plainPort = optional.redis.nodes[0]?.port;
    const run = ['run', '--key', 'job', '--redis', `rediss://127.0.0.1:${plainPort}`];
    const tls = await cli(...run, '--tls-ca', file('ca.crt'), '--', 'true');
    expect(tls.code).toBe(69);
    expect(tls.output).toMatch(/likely cause: the server does not speak TLS \(plain port\?\)/);
  });

  it('names a certificate problem, and an unreadable file by its option', async () => {
    const untrusted = await cli('status', 'job', '--redis', optional.url);
    expect(untrusted.code).toBe(69);
    expect(untrusted.output).toMatch(/self[- ]signed certificate/);
    const missing = await cli('status', 'job', '--redis', optional.url, '--tls-ca', file('nope'));
    expect(missing.code).toBe(2); // usage
    expect(missing.output).toMatch(/`--tls-ca` to be a readable PEM file, got .*nope \(ENOENT\)/);
  });
});
