// Runnable: `npm run build && node examples/semaphore.mjs`.
// Five jobs share two permits on 3 nodes; a crashed holder's permit frees itself at its TTL.

import { Locker } from 'distlock';
import { startRedis } from 'distlock/testing';

const redis = await startRedis({ nodes: 3 });
const locker = new Locker({ nodes: redis.urls });
const exports = locker.semaphore('exports', { permits: 2 });

try {
  let running = 0;
  let most = 0;
  const job = async () => {
    running++;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 100));
    running--;
  };
  await Promise.all([1, 2, 3, 4, 5].map(() => exports.withPermit({ ttlMs: 5_000 }, job)));
  console.log('5 jobs, at most running at once:', most);

  await exports.acquire({ ttlMs: 300 }); // a holder that crashes: never released
  await exports.acquire({ ttlMs: 300 });
  console.log('third permit while two are held:', await exports.tryAcquire({ ttlMs: 5_000 }));
  await new Promise((resolve) => setTimeout(resolve, 400));
  const permit = await exports.tryAcquire({ ttlMs: 5_000 });
  console.log('after their TTL:', permit === null ? 'none' : 'granted');
  console.log('release:', await permit?.release());
} finally {
  await locker.close();
  await redis.stop();
}
