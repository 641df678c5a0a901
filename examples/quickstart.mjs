// Runnable quick start: `npm run build && node examples/quickstart.mjs`.
// It starts a throwaway redis-server (distlock/testing) so it needs no Redis of yours;
// in your code, pass your own clients or URLs instead.

import { Locker } from 'distlock';
import { startRedis } from 'distlock/testing';
import { Redis } from 'ioredis';

const redis = await startRedis({ nodes: 1 });
// Never queue a command while disconnected, never re-send one after a reconnect.
const safe = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
};
const client = new Redis(redis.urls[0], safe);
const locker = new Locker({ nodes: [client] }); // ioredis clients, or 'redis://' URLs

try {
  const lock = await locker.acquire('invoice:42', { ttlMs: 10_000 }); // waits, retrying
  console.log('holding', lock.resource, 'for', Math.round(lock.remainingMs()), 'ms');

  console.log('second try while held:', await locker.tryAcquire('invoice:42', { ttlMs: 5_000 })); // null

  await lock.extend(10_000); // rejects with LockLostError if no longer held
  console.log('release:', await lock.release()); // 'released'
  console.log('release again:', await lock.release()); // 'not-held'

  const next = await locker.tryAcquire('invoice:42', { ttlMs: 5_000 });
  console.log('after release:', next?.resource); // 'invoice:42'
  await next?.release();
} finally {
  await locker.close(); // closes only connections it opened from URLs
  client.disconnect();
  await redis.stop();
}
