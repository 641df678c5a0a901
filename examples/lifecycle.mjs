// Runnable: `npm run build && node examples/lifecycle.mjs`.
// Three throwaway Redis nodes (Redlock), a scoped lock, events, and a loss made visible.
import { Locker } from 'distlock';
import { startRedis } from 'distlock/testing';

const redis = await startRedis({ nodes: 3 });
const locker = new Locker({ nodes: redis.urls });
locker.events.on('acquired', ({ resource, attempts }) =>
  console.log('acquired', resource, 'after', attempts, 'attempt(s)'),
);
locker.events.on('lost', ({ resource, error }) => console.log('lost', resource, '-', error.code));

try {
  const total = await locker.withLock('report', { ttlMs: 1_000 }, async (signal) => {
    await new Promise((resolve) => setTimeout(resolve, 2_500)); // longer than the TTL: auto-extended
    return signal.aborted ? 'aborted' : 'report done';
  });
  console.log(total);

  const lock = await locker.acquire('invoice:42', { ttlMs: 1_000, autoExtend: true });
  await Promise.all([redis.nodes[0].kill(), redis.nodes[1].kill()]); // a majority is gone
  await new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
  console.log('signal reason:', lock.signal.reason.name);
} finally {
  await locker.close();
  await redis.stop();
}
