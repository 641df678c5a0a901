// Runnable: `npm run build && node examples/cluster.mjs`.
// A Redis Cluster (3 masters, 3 replicas) as one lock node: a lock on each shard, and locks
// on the other shards while one master is stopped.

import { Locker } from 'distlock';
import { startRedisCluster } from 'distlock/testing';
import { Cluster } from 'ioredis';

const redis = await startRedisCluster();
const cluster = new Cluster(redis.startupNodes);
const locker = new Locker({ nodes: [cluster] });

try {
  // One resource per master (the key distlock:{resource} picks the slot).
  const onMaster = new Map();
  for (let i = 1; onMaster.size < 3; i++) {
    const master = await redis.masterOf(`distlock:{invoice:${i}}`);
    if (!onMaster.has(master)) onMaster.set(master, `invoice:${i}`);
  }
  for (const [master, resource] of onMaster) {
    const lock = await locker.acquire(resource, { ttlMs: 5_000, fencing: true });
    console.log(`${resource} locked on the master at port ${master.port}: fence ${lock.fence}`);
    await lock.release();
  }

  const [[stopped, stuck], ...others] = onMaster;
  stopped.pause(); // SIGSTOP: this shard answers nothing
  const error = await locker.acquire(stuck, { ttlMs: 5_000, waitMs: 0 }).catch((e) => e);
  console.log(`${stuck} while its master is stopped: ${error.code}`);
  for (const [, resource] of others) {
    const lock = await locker.acquire(resource, { ttlMs: 5_000, waitMs: 0 });
    console.log(`${resource} meanwhile: ${await lock.release()}`);
  }
  stopped.resume();
} finally {
  await locker.close();
  cluster.disconnect();
  await redis.stop();
}
