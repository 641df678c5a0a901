// Runnable: `npm run build && node examples/failover.mjs`.
// A Sentinel group (master, replica, 3 sentinels) as a lock node. With replicaAcks: 1 a lock
// counts only once the replica has it, so it survives the master's failover.

import { Locker } from 'distlock';
import { startRedisSentinel } from 'distlock/testing';
import { Redis } from 'ioredis';

const group = await startRedisSentinel({ masterName: 'orders' });
const client = () => {
  const redis = new Redis({ sentinels: group.sentinelAddresses, name: 'orders' });
  redis.on('error', () => {}); // reconnects during the failover
  return redis;
};
const clients = [client(), client()];
const holder = new Locker({ nodes: [clients[0]], replicaAcks: 1, nodeTimeoutMs: 400 });
const rival = new Locker({ nodes: [clients[1]], replicaAcks: 1, nodeTimeoutMs: 400 });

try {
  console.log('node:', holder.nodes[0].replace(/\(.*\)/, '(sentinels)'));
  const lock = await holder.acquire('order:7', { ttlMs: 30_000 });
  const before = await group.master();
  const after = await group.failover(); // SENTINEL FAILOVER: the replica becomes the master
  console.log('failed over:', before.port !== after.port);
  const second = await rival.acquire('order:7', { ttlMs: 5_000, waitMs: 0 }).catch((e) => e);
  console.log('rival after the failover:', second.code);
  console.log('holder releases:', await lock.release());
} finally {
  await holder.close();
  await rival.close();
  for (const redis of clients) redis.disconnect();
  await group.stop();
}
