import { isIP, connect as openSocket, type Socket } from 'node:net';
import { connect as openTlsSocket } from 'node:tls';

/**
 * How long a TLS connection attempt may go without completing its handshake before distlock
 * asks whether the server speaks plain Redis instead: a plain server reads the TLS hello as
 * the start of a command and waits for the rest, so the client's own connect timeout (10 s
 * in ioredis, 5 s in node-redis) would pass first.
 */
export const TLS_HANDSHAKE_WAIT_MS = 500;

/** How long that check (or the one after a failed plain connection) waits for the server. */
export const SCHEME_CHECK_TIMEOUT_MS = 500;

/** Where a connection goes, and whether it speaks TLS there. */
export interface SchemeTarget {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** The TLS server name to send (SNI), when it is not the host. */
  readonly servername?: string | undefined;
}

/**
 * A connection failed, and its server speaks the other scheme: a `redis://` URL (or a client
 * without TLS) at a TLS port, or a `rediss://` URL (a client with TLS) at a plain one. A
 * configuration error: retrying cannot fix it. `cause`: the client's own error.
 */
export class TlsSchemeError extends Error {
  /** What the server was found to speak. */
  readonly serverSpeaks: 'tls' | 'plain';

  constructor(serverSpeaks: 'tls' | 'plain', cause: Error | undefined) {
    const fix =
      serverSpeaks === 'tls'
        ? 'the server speaks TLS: use rediss://'
        : 'the server does not speak TLS (plain port?): use redis://';
    const raw = cause ? cause.message.replace(/\s*\n\s*/g, ' ').trim() : undefined;
    const what = raw ?? `no TLS handshake within ${TLS_HANDSHAKE_WAIT_MS} ms`;
    super(`${what}; likely cause: ${fix}`, { cause });
    this.name = 'TlsSchemeError';
    this.serverSpeaks = serverSpeaks;
  }
}

/** Failures that say what is wrong already: nothing listens there, or no such host. */
const NOT_A_MIX_UP = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * Finds out whether a connection that keeps failing talks to a server of the other scheme,
 * at most once between two times the connection was ready (each check opens two short
 * connections of its own). It only ever blames the scheme when the server answered in the
 * other one, so a reset or a timeout of the network itself is never taken for a mix-up.
 */
export class SchemeCheck {
  readonly #target: SchemeTarget | undefined;
  #check: Promise<TlsSchemeError | undefined> | undefined;
  #found: TlsSchemeError | undefined;

  /** `target`: undefined for connections it cannot check (a Unix socket). */
  constructor(target: SchemeTarget | undefined) {
    this.#target = target;
  }

  /** Whether the client speaks TLS, so that a stalled handshake is worth a check. */
  get tls(): boolean {
    return this.#target?.tls === true;
  }

  /** The mix-up found since the connection was last ready. */
  get found(): TlsSchemeError | undefined {
    return this.#found;
  }

  /**
   * After a failed connection: checks the server's scheme, unless it was checked already
   * since the connection was last ready, or there is no `cause` (a close that the caller
   * asked for), or `cause` explains the failure by itself (refused, no such host, a server's
   * error reply). Resolves with the mix-up found, or undefined; never rejects.
   */
  afterFailure(cause: Error | undefined): Promise<TlsSchemeError | undefined> {
    if (this.#check) return this.#check;
    if (!cause || !mayBeMixUp(cause)) return Promise.resolve(undefined);
    return this.#run(cause);
  }

  /** After a TLS handshake that took {@link TLS_HANDSHAKE_WAIT_MS}: as `afterFailure`. */
  afterStall(): Promise<TlsSchemeError | undefined> {
    if (this.#check) return this.#check;
    if (!this.tls) return Promise.resolve(undefined);
    return this.#run(undefined);
  }

  #run(cause: Error | undefined): Promise<TlsSchemeError | undefined> {
    const target = this.#target;
    if (!target) return Promise.resolve(undefined);
    const expected = target.tls ? 'tls' : 'plain';
    this.#check = serverScheme(target).then((scheme) => {
      if (scheme && scheme !== expected) this.#found = new TlsSchemeError(scheme, cause);
      return this.#found;
    });
    return this.#check;
  }

  /**
   * Watches one connection attempt of an adapter: `failed()` (the attempt failed, its error
   * read by `lastError` then) and a TLS handshake still pending after
   * {@link TLS_HANDSHAKE_WAIT_MS} call `notReady` once the check has had its say, so that
   * the failure names a mix-up; `stop()` ends the watch when the attempt settles.
   */
  watchAttempt(
    lastError: () => Error | undefined,
    notReady: () => void,
  ): { failed: () => void; stop: () => void } {
    const stalled = this.tls
      ? setTimeout(() => {
          this.afterStall().then((found) => found && notReady());
        }, TLS_HANDSHAKE_WAIT_MS)
      : undefined;
    stalled?.unref();
    return {
      failed: () => {
        this.afterFailure(lastError()).then(() => notReady());
      },
      stop: () => clearTimeout(stalled),
    };
  }

  /** The connection is ready: it speaks the right scheme; a later failure is checked anew. */
  clear(): void {
    this.#check = undefined;
    this.#found = undefined;
  }
}

function mayBeMixUp(cause: Error): boolean {
  if (NOT_A_MIX_UP.has((cause as NodeJS.ErrnoException).code ?? '')) return false;
  return !/^[A-Z][A-Z_]+ /.test(cause.message); // an error reply: the server understood
}

/**
 * What the server speaks, asked both ways at once: the first conclusive answer wins (a plain
 * server answers `PING` at once, while it would leave a TLS hello unanswered); undefined
 * when neither answers within {@link SCHEME_CHECK_TIMEOUT_MS}.
 */
function serverScheme(target: SchemeTarget): Promise<'tls' | 'plain' | undefined> {
  return new Promise((resolve) => {
    let pending = 2;
    const answered = (scheme: 'tls' | 'plain') => (yes: boolean) => {
      pending--;
      if (yes) resolve(scheme);
      else if (pending === 0) resolve(undefined);
    };
    speaksTls(target).then(answered('tls'));
    speaksPlainRedis(target).then(answered('plain'));
  });
}

/**
 * Whether a TLS handshake with the target completes, or fails on the server's TLS alert
 * (it wants a client certificate, say): either way the server speaks TLS. Certificates are
 * not checked: only the scheme is asked.
 */
function speaksTls({ host, port, servername }: SchemeTarget): Promise<boolean> {
  const name = servername ?? (isIP(host) === 0 ? host : undefined);
  const socket = openTlsSocket({ host, port, rejectUnauthorized: false, servername: name });
  return answer(socket, 'secureConnect', (error) => /^ERR_SSL_.*ALERT/.test(error.code ?? ''));
}

/** Whether the target answers a plain `PING` with a Redis reply (`+PONG`, `-NOAUTH ...`). */
function speaksPlainRedis({ host, port }: SchemeTarget): Promise<boolean> {
  const socket = openSocket({ host, port });
  socket.once('connect', () => socket.write('PING\r\n'));
  return answer(
    socket,
    'data',
    () => false,
    (data) => /^[+-]/.test(String(data)),
  );
}

/**
 * Settles with whether `socket` gave the `event` that proves the scheme (and `accept` agreed)
 * or an error that does, within {@link SCHEME_CHECK_TIMEOUT_MS}; the socket is then closed.
 */
function answer(
  socket: Socket,
  event: string,
  errorProves: (error: NodeJS.ErrnoException) => boolean,
  accept: (value: unknown) => boolean = () => true,
): Promise<boolean> {
  socket.unref();
  return new Promise((resolve) => {
    const done = (yes: boolean) => {
      clearTimeout(timer);
      socket.removeAllListeners(event);
      socket.destroy();
      resolve(yes);
    };
    const timer = setTimeout(() => done(false), SCHEME_CHECK_TIMEOUT_MS);
    timer.unref();
    socket.once(event, (value: unknown) => done(accept(value)));
    socket.on('error', (error: NodeJS.ErrnoException) => done(errorProves(error)));
    socket.once('close', () => done(false));
  });
}
