// Runnable: `npm run build && node examples/acquire-all.mjs`.
// Two transfers lock the same two accounts, named in opposite orders: no deadlock.

import { Locker } from 'distlock';
import { startRedis } from 'distlock/testing';

const redis = await startRedis({ nodes: 3 });
const locker = new Locker({ nodes: redis.urls });

async function transfer(from, to) {
  const accounts = await locker.acquireAll([from, to], { ttlMs: 5_000, waitMs: 5_000 });
  try {
    await new Promise((resolve) => setTimeout(resolve, 50)); // move the money
    return accounts.resources.join(' and ');
  } finally {
    await accounts.release();
  }
}

try {
  const done = await Promise.all([
    transfer('account:1', 'account:2'),
    transfer('account:2', 'account:1'),
  ]);
  console.log('both transfers done, each locked', done[0]);

  const held = await locker.acquire('account:2', { ttlMs: 5_000 });
  const error = await locker
    .acquireAll(['account:1', 'account:2'], { ttlMs: 5_000, waitMs: 0 })
    .catch((e) => e);
  console.log('while account:2 is held:', error.code, error.resource);
  console.log(
    'account:1 left free:',
    (await locker.tryAcquire('account:1', { ttlMs: 1_000 })) !== null,
  );
  await held.release();
} finally {
  await locker.close();
  await redis.stop();
}
