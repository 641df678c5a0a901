import { ioredisLibrary } from '../driver/libraries.js';
import type { RedisServer } from './redis-server.js';

/**
 * Opens a connection to `node`, runs `commands` in order and closes it. A node that is down
 * or paused rejects within about a second instead of holding the caller.
 */
export async function ask(node: RedisServer, ...commands: readonly string[][]): Promise<unknown[]> {
  const { Redis } = ioredisLibrary('to talk to the servers of distlock/testing');
  const client = new Redis({
    host: '127.0.0.1',
    port: node.port,
    lazyConnect: true,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 1000,
  });
  client.on('error', () => {}); // each failed command rejects with the same error
  try {
    await client.connect();
    const replies: unknown[] = [];
    for (const [name = '', ...args] of commands) replies.push(await client.call(name, ...args));
    return replies;
  } finally {
    client.disconnect();
  }
}
