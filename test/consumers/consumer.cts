// A CommonJS consumer: `require` resolves to dist/cjs and its types. Type-checked, then run
// against REDIS_URL: it takes a lock, shows that a second one is refused, and releases it.
import distlock = require('distlock');
import nodeCron = require('distlock/node-cron');
import testing = require('distlock/testing');
import ioredis = require('ioredis');

async function main(): Promise<void> {
  const client = new ioredis.Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const locker = new distlock.Locker({ nodes: [client] });
  try {
    const lock = await locker.acquire('cjs-consumer', { ttlMs: 5_000 });
    const second = await locker.tryAcquire('cjs-consumer', { ttlMs: 5_000 });
    console.log(`acquired ${lock.resource}; second: ${second}; release: ${await lock.release()}`);
    console.log(`startRedis: ${typeof testing.startRedis}`);
    console.log(`runCoordinator: ${typeof nodeCron.runCoordinator}`);
  } finally {
    await locker.close();
    await client.quit();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
