import { Redis } from 'ioredis';

/** Plain ioredis clients with default options, as each library's users would create them. */
export async function openClients(urls: readonly string[]): Promise<Redis[]> {
  const clients = urls.map((url) => new Redis(url));
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
