// Runnable: `npm run build && node examples/read-write.mjs`.
// Readers share a document; a writer waits for them, and readers that come later wait for it.

import { Locker } from 'distlock';
import { startRedis } from 'distlock/testing';

const redis = await startRedis({ nodes: 3 });
const locker = new Locker({ nodes: redis.urls });
const doc = locker.readWriteLock('doc:42');
const log = [];

try {
  const first = await doc.read.acquire({ ttlMs: 5_000 });
  const second = await doc.read.acquire({ ttlMs: 5_000 });
  console.log('two readers at once:', first.remainingMs() > 0 && second.remainingMs() > 0);

  const writing = doc.write.withLock({ ttlMs: 5_000 }, async () => log.push('writer'));
  await new Promise((resolve) => setTimeout(resolve, 100)); // the writer waits in line
  const late = doc.read.withLock({ ttlMs: 5_000 }, async () => log.push('late reader'));
  await new Promise((resolve) => setTimeout(resolve, 100));
  console.log('late reader got in before the writer:', log.length > 0);

  await Promise.all([first.release(), second.release()]);
  await Promise.all([writing, late]);
  console.log('order:', log.join(', '));
} finally {
  await locker.close();
  await redis.stop();
}
