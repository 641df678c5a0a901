// What distlock does to an error it caught before passing it on. Kept out of errors.ts: the
// package's other entries take errors.ts from the main bundle, so it holds only what the
// main entry exports.

/** `error` if it is an `Error`, else an `Error` that says what was thrown. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** How a lock token looks (22 base64url characters: 128 bits), wherever it is echoed. */
const TOKEN = /(?<![\w-])[\w-]{22}(?![\w-])/g;

/** A Redis error reply: its message starts with the error code (`ERR`, `NOSCRIPT`...). */
const REPLY = /^[A-Z][A-Z_]* /;

/**
 * `error` without lock tokens: Redis echoes a command's arguments in some error replies
 * ("ERR unknown command 'EVALSHA', with args beginning with: ... '<token>'"), and clients
 * attach the command itself. Such an error is replaced by one of the same class with the
 * tokens masked and nothing attached. distlock's own errors (a node not connected, named by
 * a host name that may look like a token) never hold a token and are returned as they are.
 */
export function withoutTokens(error: Error): Error {
  TOKEN.lastIndex = 0;
  const echoes = REPLY.test(error.message) && TOKEN.test(error.message);
  if (!('command' in error) && !echoes) return error;
  const message = error.message.replace(TOKEN, '<token>');
  const masked = Object.create(Object.getPrototypeOf(error)) as Error;
  Object.defineProperties(masked, {
    message: { value: message, writable: true, configurable: true },
    name: { value: error.name, writable: true, configurable: true },
    stack: { value: `${error.name}: ${message}`, writable: true, configurable: true },
  });
  return masked;
}
