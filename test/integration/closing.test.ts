import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { type Lock, LockerClosedError, LockLostError } from '../../src/index.js';
import { keysLeft, useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);

/** The error (or value) that `promise` settles with, caught from the start. */
function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.catch((error: unknown) => error);
}

/** What `settled` resolved with, or 'pending' after `ms`. */
function within(settled: Promise<unknown>, ms: number): Promise<unknown> {
  return Promise.race([settled, delay(ms, 'pending')]);
}

/** Every key on every node (but its lease record) with its PTTL (-1: no expiry). */
async function keysAndTtls(): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const [index, admin] of fixture().admin.entries()) {
    for (const key of await keysLeft(admin, '*')) found[`${index}:${key}`] = await admin.pttl(key);
  }
  return found;
}

describe('Locker.close()', () => {
  it('stops a wait with waitMs: Infinity at once, with LockerClosedError', async () => {
    await locker().acquire('job', { ttlMs: 10_000 });
    const waiter = locker();
    const waiting = outcome(
      waiter.acquire('job', { ttlMs: 1_000, waitMs: Number.POSITIVE_INFINITY }),
    );
    await delay(150);
    const closedAt = performance.now();
    await waiter.close();
    const error = await within(waiting, 1_000);
    expect(error).toBeInstanceOf(LockerClosedError);
    expect((error as LockerClosedError).code).toBe('LOCKER_CLOSED');
    expect(performance.now() - closedAt).toBeLessThan(300);
  });

  it('takes a fair waiter out of the line before the connections close', async () => {
    await locker().acquire('job', { ttlMs: 10_000 });
    const waiter = locker();
    const waiting = outcome(waiter.acquire('job', { ttlMs: 1_000, waitMs: 60_000, fair: true }));
    await delay(150);
    expect(Object.keys(await keysAndTtls())).toContain('0:distlock:{job}:queue');
    await waiter.close();
    expect(await within(waiting, 1_000)).toBeInstanceOf(LockerClosedError);
    const left = await keysAndTtls();
    expect(Object.keys(left).sort()).toEqual([
      '0:distlock:{job}',
      '1:distlock:{job}',
      '2:distlock:{job}',
    ]);
  });

  it('releases the locks it holds and fires their signals; release() then says not-held', async () => {
    const closing = locker();
    const released: string[] = [];
    closing.events.on('released', ({ resource, result }) => released.push(`${resource} ${result}`));
    const plain = await closing.acquire('a', { ttlMs: 10_000 });
    const extended = await closing.acquire('b', { ttlMs: 1_000, autoExtend: true });
    const { signal } = extended;
    await closing.close();
    expect(await keysAndTtls()).toEqual({});
    expect(released.sort()).toEqual(['a released', 'b released']);
    for (const lock of [plain, extended] as Lock[]) {
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(lock.remainingMs()).toBe(0);
      expect(await lock.release()).toBe('not-held');
    }
    expect(signal.reason.message).toContain('its locker was closed');
    // And nobody waits out a TTL: the resources are free at once.
    expect(await locker().tryAcquire('a', { ttlMs: 1_000 })).not.toBeNull();
  });

  it('makes every later operation reject at once with LockerClosedError', async () => {
    const closed = locker();
    const lock = await closed.acquire('a', { ttlMs: 10_000 });
    await closed.close();
    const started = performance.now();
    const attempts = [
      closed.acquire('x', { ttlMs: 1_000, waitMs: 5_000 }),
      closed.tryAcquire('x', { ttlMs: 1_000 }),
      closed.withLock('x', { ttlMs: 1_000 }, () => 'ran'),
      lock.extend(),
    ].map(outcome);
    for (const attempt of attempts) {
      expect(await within(attempt, 1_000)).toBeInstanceOf(LockerClosedError);
    }
    expect(performance.now() - started).toBeLessThan(100);
    expect(await keysAndTtls()).toEqual({});
    await closed.close(); // a second close is harmless
  });

  it('lets many acquisitions wait at once without a listener-leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    const l = locker();
    const held = await l.acquire('job', { ttlMs: 5_000 });
    const waits = Array.from({ length: 50 }, () =>
      l.acquire('job', { ttlMs: 1_000, waitMs: 5_000 }).then((lock) => lock.release()),
    );
    await delay(200);
    await held.release();
    await Promise.all(waits);
    await delay(10); // warnings are emitted on the next tick
    process.off('warning', onWarning);
    expect(warnings).toEqual([]);
  });

  it('survives a lock listener that calls close() again, and releases each lock once', async () => {
    const l = locker();
    const released: string[] = [];
    l.events.on('released', ({ resource, result }) => released.push(`${resource} ${result}`));
    const lock = await l.acquire('a', { ttlMs: 10_000 });
    lock.signal.addEventListener('abort', () => void l.close()); // "on loss, shut down"
    await locker().acquire('b', { ttlMs: 10_000 });
    const waiting = outcome(l.acquire('b', { ttlMs: 1_000, waitMs: 60_000 }));
    await delay(100);
    expect(await within(l.close(), 2_000)).toBeUndefined();
    expect(await within(waiting, 100)).toBeInstanceOf(LockerClosedError);
    expect(released).toEqual(['a released']);
  });

  it('waits for a release still in flight before closing the connections', async () => {
    const l = locker();
    await (await l.acquire('warm-up', { ttlMs: 30_000 })).release(); // the release script loaded
    const lock = await l.acquire('a', { ttlMs: 30_000 });
    // A script cache emptied since: the release needs a second round trip (NOSCRIPT, EVAL).
    await Promise.all(fixture().admin.map((client) => client.script('FLUSH')));
    const releasing = lock.release();
    await l.close();
    expect(await releasing).toBe('released');
    expect(await keysAndTtls()).toEqual({});
  });

  it('forgets locks that were left to expire, instead of keeping and releasing them', async () => {
    const l = locker();
    let released = 0;
    l.events.on('released', () => released++);
    for (let i = 0; i < 300; i++) await l.tryAcquire(`throttle:${i}`, { ttlMs: 50 });
    await delay(100); // all expired, none released
    await l.close();
    expect(released).toBe(0);
  });
});
