/**
 * A locker closes its connection through a FaultProxy (QUIT), then the proxy and the node
 * stop. Nothing is left to run: the process must exit by itself. Prints `closed` once
 * everything was closed.
 */
import { Locker } from '../../src/index.js';
import { FaultProxy, startRedis } from '../../src/testing/index.js';

const redis = await startRedis();
const proxy = await FaultProxy.start(redis.nodes[0]?.port as number);
const locker = new Locker({ nodes: [proxy.url] });
await (await locker.acquire('r', { ttlMs: 1_000 })).release();
await locker.close();
await proxy.close();
await redis.stop();
process.stdout.write('closed\n');
