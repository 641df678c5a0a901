// Type-level test, checked by `npm run typecheck` (never run): every client library distlock
// supports is accepted, as the library's own types declare it, wherever a node or a client
// is taken. A line that stops type-checking fails the typecheck.
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import type { Redis as IORedis5, Cluster as IORedisCluster5 } from 'ioredis';
import { Redis as IORedis6, type Cluster as IORedisCluster6 } from 'ioredis6';
import type { Redis as IOValkey, Cluster as IOValkeyCluster } from 'iovalkey';
import { createClient as createClient5, createCluster } from 'redis';
import type { createClient as createClient6, createCluster as createCluster6 } from 'redis6';
import {
  fencedPeek,
  fencedReadForUpdate,
  fencedWrite,
  Locker,
  type NodeSpec,
  type RedisClient,
} from '../../src/index.js';

declare const ioredis5: IORedis5;
declare const ioredis6: IORedis6;
declare const ioredis6Resp3: ReturnType<typeof resp3IORedis6>;
declare const iovalkey: IOValkey;
declare const nodeRedis5: ReturnType<typeof createClient5>;
declare const nodeRedis5Resp3: ReturnType<typeof resp3NodeRedis5>;
declare const nodeRedis6: ReturnType<typeof createClient6>;
declare const glide: GlideClient;

function resp3IORedis6() {
  return new IORedis6({ protocol: 3, replyMapping: 'resp3' });
}

function resp3NodeRedis5() {
  return createClient5({ RESP: 3 });
}

// The reported failure: `new Redis()` of ioredis 6 was TS2322 against NodeSpec.
const nodes: NodeSpec[] = [
  ioredis5,
  ioredis6,
  ioredis6Resp3,
  iovalkey,
  nodeRedis5,
  nodeRedis5Resp3,
  nodeRedis6,
  glide,
];
export const locker = new Locker({ nodes });
export const lockerOfEach = [
  new Locker({ nodes: [ioredis6, ioredis6, ioredis6] }),
  new Locker({ nodes: [iovalkey] }),
  new Locker({ nodes: [nodeRedis5] }),
  new Locker({ nodes: [nodeRedis6] }),
  new Locker({ nodes: [glide] }),
];

const clients: RedisClient[] = [ioredis6, iovalkey, nodeRedis5, nodeRedis6, glide];
for (const client of clients) {
  void fencedReadForUpdate(client, 'account:7', 1n);
  void fencedWrite(client, 'account:7', 1n, 'value');
  void fencedPeek(client, 'account:7');
  void fencedWrite(client, 'account:7', 1n, 'value', { timeoutMs: 1_000 });
}
void fencedReadForUpdate(ioredis6, 'k', 1n);
void fencedWrite(iovalkey, 'k', 1n, 'v');
void fencedPeek(nodeRedis6, 'k');
void fencedWrite(glide, 'k', 1n, 'v');

// A Redis Cluster is one lock node, whichever client library reaches it.
declare const nodeRedisCluster5: ReturnType<typeof createCluster>;
declare const nodeRedisCluster5Resp3: ReturnType<typeof resp3NodeRedisCluster5>;
declare const nodeRedisCluster6: ReturnType<typeof createCluster6>;

function resp3NodeRedisCluster5() {
  return createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }], RESP: 3 });
}

declare const glideCluster: GlideClusterClient;
declare const ioredisCluster5: IORedisCluster5;
declare const ioredisCluster6: IORedisCluster6;
declare const iovalkeyCluster: IOValkeyCluster;

const clusterNodes: NodeSpec[] = [
  ioredisCluster5,
  ioredisCluster6,
  iovalkeyCluster,
  nodeRedisCluster5,
  nodeRedisCluster5Resp3,
  nodeRedisCluster6,
  glideCluster,
];
export const clusterLocker = new Locker({ nodes: clusterNodes });
export const clusterLockerOfEach = [
  new Locker({ nodes: [nodeRedisCluster5] }),
  new Locker({ nodes: [nodeRedisCluster6] }),
  new Locker({ nodes: [glideCluster] }),
];
const clusterClients: RedisClient[] = [nodeRedisCluster5, nodeRedisCluster6, glideCluster];
for (const client of clusterClients) void fencedWrite(client, 'account:7', 1n, 'value');
void fencedPeek(nodeRedisCluster6, 'k');
void fencedReadForUpdate(glideCluster, 'k', 1n);
