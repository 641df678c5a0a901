// Runnable: `npm run build && node examples/fencing.mjs`.
// A holder stalls past its lease; the next holder writes; the stalled one's write is refused.

import { fencedPeek, fencedReadForUpdate, fencedWrite, Locker } from 'distlock';
import { startRedis } from 'distlock/testing';
import { Redis } from 'ioredis';

const redis = await startRedis({ nodes: 3 });
const store = new Redis(redis.urls[0]); // the protected data may live anywhere; here, node 0
const locker = new Locker({ nodes: redis.urls });

try {
  const slow = await locker.acquire('account:7', { ttlMs: 200, fencing: true });
  const read = await fencedReadForUpdate(store, 'account:7:balance', slow.fence); // claims it for this fence
  console.log('slow holder: fence', slow.fence, 'read', read.value);
  await new Promise((resolve) => setTimeout(resolve, 300)); // a GC pause, longer than the lease

  const next = await locker.acquire('account:7', { ttlMs: 5_000, fencing: true });
  console.log('next holder: fence', next.fence);
  await fencedReadForUpdate(store, 'account:7:balance', next.fence);
  console.log(
    'next holder writes:',
    await fencedWrite(store, 'account:7:balance', next.fence, '120'),
  );
  console.log(
    'slow holder writes:',
    await fencedWrite(store, 'account:7:balance', slow.fence, '90'),
  );
  await next.release();
  console.log('stored:', (await fencedPeek(store, 'account:7:balance')).value);
} finally {
  await locker.close();
  store.disconnect();
  await redis.stop();
}
