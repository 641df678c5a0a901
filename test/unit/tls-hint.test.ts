/**
 * A TLS connection reset before the server's "certificate required" alert was read: the
 * error then names the likely fix. A scripted client stands in for ioredis, because the
 * race (the client writes before it reads the alert) cannot be forced on a real server.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { IORedisConnection, type IORedisLike } from '../../src/driver/ioredis.js';

function resetClient(tls: object | undefined): IORedisLike & EventEmitter {
  const client = Object.assign(new EventEmitter(), {
    status: 'reconnecting',
    options: { host: '127.0.0.1', port: 6380, ...(tls ? { tls } : {}) },
    call: async () => 'OK',
    connect: async () => {},
    quit: async () => 'OK',
    disconnect: () => {},
    duplicate: () => {
      throw new Error('not needed');
    },
  });
  return client as unknown as IORedisLike & EventEmitter;
}

function reset(): Error {
  return Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' });
}

describe('a TLS connection reset without a client certificate', () => {
  it('says a server requiring one may be why', async () => {
    const client = resetClient({ ca: 'x' });
    const connection = new IORedisConnection(client);
    client.emit('error', reset());
    await expect(connection.send('GET', ['k'], 100)).rejects.toThrow(
      /write ECONNRESET \(if the server requires a client certificate, give tls\.cert and tls\.key\)/,
    );
  });

  it('says nothing more with a client certificate, or without TLS', async () => {
    for (const tls of [{ ca: 'x', cert: 'c', key: 'k' }, undefined]) {
      const client = resetClient(tls);
      const connection = new IORedisConnection(client);
      client.emit('error', reset());
      const error = await connection.send('GET', ['k'], 100).catch((e: Error) => e);
      expect((error as Error).message).toMatch(/write ECONNRESET$/);
    }
  });
});
