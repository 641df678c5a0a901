import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';

/** The client libraries the bench can give every contender. */
export const CLIENT_LIBRARIES = ['ioredis6', 'ioredis5'] as const;
export type ClientLibrary = (typeof CLIENT_LIBRARIES)[number];

/**
 * The client library of this run: `BENCH_CLIENT` (set by `--client`), ioredis 6 by default.
 * Read from the environment so that worker processes, forked per run, use the same one.
 */
export function clientLibrary(): ClientLibrary {
  const chosen = process.env.BENCH_CLIENT ?? 'ioredis6';
  if (!(CLIENT_LIBRARIES as readonly string[]).includes(chosen)) {
    throw new Error(`unknown client library ${chosen}: use ${CLIENT_LIBRARIES.join(' or ')}`);
  }
  return chosen as ClientLibrary;
}

/** The run's client library and its installed version, e.g. `ioredis 6.0.0`. */
export function clientDescription(): string {
  const library = clientLibrary();
  const packageName = library === 'ioredis6' ? 'ioredis6' : 'ioredis';
  const { version } = createRequire(import.meta.url)(`${packageName}/package.json`) as {
    version: string;
  };
  return `ioredis ${version}`;
}

/**
 * Plain clients of the run's library with default options, as each library's users would
 * create them. Typed as ioredis 5: the contenders use only what both versions have.
 */
export async function openClients(urls: readonly string[]): Promise<Redis[]> {
  const library = clientLibrary();
  const clients = urls.map((url) =>
    library === 'ioredis6' ? (new Redis6(url) as unknown as Redis) : new Redis(url),
  );
  for (const client of clients) client.on('error', () => {});
  await Promise.all(
    clients.map((client) =>
      client.status === 'ready'
        ? undefined
        : new Promise((resolve) => client.once('ready', resolve)),
    ),
  );
  return clients;
}

export function closeClients(clients: readonly Redis[]): void {
  for (const client of clients) client.disconnect();
}

/** Commands an ioredis client holds: sent but unanswered, plus queued while offline. */
export function pendingCommands(client: Redis): number {
  const internals = client as unknown as {
    commandQueue?: { length: number };
    offlineQueue?: { length: number };
  };
  return (internals.commandQueue?.length ?? 0) + (internals.offlineQueue?.length ?? 0);
}
