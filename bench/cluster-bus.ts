/**
 * What a hand-off costs a Redis Cluster, measured the same way by the `cluster-wake-ups`
 * scenario and by its test (no import of the rest of the bench, which the test's
 * compilation does not cover).
 */
import { Redis } from 'ioredis';
import type { Locker } from '../src/index.js';
import type { RedisServer } from '../src/testing/index.js';

/** Pub/sub messages each master received from the others over the cluster bus. */
export async function busMessages(masters: readonly RedisServer[]): Promise<number[]> {
  return Promise.all(
    masters.map(async (master) => {
      const admin = new Redis(master.port);
      try {
        const info = String(await admin.call('CLUSTER', 'INFO'));
        const count = (name: string) =>
          Number(new RegExp(`${name}_received:(\\d+)`).exec(info)?.[1] ?? 0);
        return (
          count('cluster_stats_messages_publish') + count('cluster_stats_messages_publishshard')
        );
      } finally {
        admin.disconnect();
      }
    }),
  );
}

/**
 * `holder` takes `resource`, `waiter` waits for it until it sleeps out a polling delay
 * (`waiter`'s `retryDelayMs`), then the holder releases: how long the waiter took to get the
 * lock after the release (ms).
 */
export async function handOff(
  holder: Locker,
  waiter: Locker,
  resource: string,
  retryDelayMs: number,
): Promise<number> {
  const held = await holder.acquire(resource, { ttlMs: 30_000 });
  const pausing = new Promise<void>((resolve) => {
    const onRetry = ({ resource: r, delayMs }: { resource: string; delayMs: number }) => {
      if (r !== resource || delayMs <= 0) return;
      waiter.events.off('retry', onRetry);
      resolve();
    };
    waiter.events.on('retry', onRetry);
  });
  const waiting = waiter.acquire(resource, { ttlMs: 30_000, waitMs: 4 * retryDelayMs });
  await pausing;
  const releasedAt = performance.now();
  const released = await held.release();
  // A release that did not free the lock leaves the waiter polling until the TTL: say so
  // rather than report a hand-off that never was.
  if (released !== 'released') {
    const waited = await waiting.then(
      (lock) => lock.release().then(() => 'got the lock anyway'),
      (error: Error) => error.message,
    );
    throw new Error(`the holder's release answered "${released}"; the waiter: ${waited}`);
  }
  const lock = await waiting;
  const tookMs = performance.now() - releasedAt;
  await lock.release();
  return tookMs;
}
