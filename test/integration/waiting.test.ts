import { describe, expect, it } from 'vitest';
import type { Locker } from '../../src/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);

/** Attempts per second and per waiter that two waiters make on a busy resource. */
async function attemptsPerSecond(waiters: readonly Locker[], fair: boolean): Promise<number> {
  let attempts = 0;
  for (const waiter of waiters) waiter.events.on('retry', () => attempts++);
  const started = performance.now();
  const options = { ttlMs: 10_000, waitMs: 1_500, fair };
  await Promise.all(
    waiters.map((waiter) =>
      expect(waiter.acquire('report', options)).rejects.toMatchObject({ code: 'ACQUIRE_TIMEOUT' }),
    ),
  );
  return attempts / waiters.length / ((performance.now() - started) / 1_000);
}

/** A holder on nodes 0 and 1 only: node 2 was down while it acquired, and came back empty. */
async function holdOnBareMajority(): Promise<void> {
  const node = fixture().redis.nodes[2];
  await node?.kill();
  await locker().acquire('report', { ttlMs: 10_000 });
  await node?.restart();
}

describe('a waiter on a lock held by a bare majority', () => {
  for (const fair of [false, true]) {
    it(`retries at its polling rate, not woken by its own undo (${fair ? 'fair' : 'plain'})`, async () => {
      await locker().acquire('report', { ttlMs: 10_000 });
      const allNodes = await attemptsPerSecond([locker(), locker()], fair);
      await Promise.all(fixture().admin.map((client) => client.flushall()));

      await holdOnBareMajority();
      const bareMajority = await attemptsPerSecond([locker(), locker()], fair);
      // Before the fix: thousands per second, each undo of node 2 waking the waiter itself.
      expect(allNodes).toBeLessThan(20);
      expect(bareMajority).toBeLessThan(2 * allNodes);
    });
  }
});
