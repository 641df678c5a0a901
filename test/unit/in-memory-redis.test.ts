/**
 * `InMemoryRedis` (distlock/testing): a `Locker` over in-process nodes, with no server, and
 * time driven by fake timers. What it answers is the simulated node's, which
 * test/simulation/differential.test.ts checks command by command against redis-server.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DEFAULTS,
  InvalidArgumentError,
  LockBusyError,
  Locker,
  LockLostError,
  NoQuorumError,
  NotSentError,
} from '../../src/index.js';
import { InMemoryRedis } from '../../src/testing/index.js';

const lockers: Locker[] = [];
const lockerOn = (nodes: InMemoryRedis[], options: { waitMs?: number } = {}) => {
  const locker = new Locker({ nodes, ...options });
  lockers.push(locker);
  return locker;
};

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(lockers.splice(0).map((locker) => locker.close()));
});

describe('InMemoryRedis', () => {
  it('holds a lock for one holder at a time, with fences that grow', async () => {
    const redis = new InMemoryRedis();
    const locker = lockerOn([redis]);
    const first = await locker.acquire('invoice:1', { ttlMs: 10_000, fencing: true });
    const busy = locker.acquire('invoice:1', { ttlMs: 10_000, waitMs: 0 });
    await expect(busy).rejects.toBeInstanceOf(LockBusyError);
    expect(await redis.command('PTTL', 'distlock:{invoice:1}')).toBeGreaterThan(9_000);
    await first.release();
    const second = await locker.acquire('invoice:1', { ttlMs: 10_000, fencing: true });
    expect(second.fence).toBeGreaterThan(first.fence ?? 2n ** 64n);
    await second.release();
    expect(await redis.command('EXISTS', 'distlock:{invoice:1}')).toBe(0);
  });

  it('hands the lock to a waiter when its holder releases, woken over pub/sub, not by a retry', async () => {
    // Time stands still: a waiter that only polled would sleep its retry delay forever.
    vi.useFakeTimers();
    const redis = new InMemoryRedis();
    const holder = lockerOn([redis]);
    const locker = lockerOn([redis]); // another locker: only the node's message can wake it
    const held = await holder.acquire('report', { ttlMs: 30_000 });
    const waiting = locker.acquire('report', { ttlMs: 30_000, waitMs: 20_000 });
    while ((await locker.inspect('report')).waiters === 0);
    await held.release();
    const next = await waiting;
    expect(next.resource).toBe('report');
    await next.release();
  });

  it('ends a lock when fake time passes its validity, and the key at its TTL', async () => {
    vi.useFakeTimers();
    const redis = new InMemoryRedis();
    const locker = lockerOn([redis]);
    const ttlMs = 1_000;
    const lock = await locker.acquire('job', { ttlMs });
    const { signal } = lock;
    // No time passed while acquiring: the validity is the TTL less the drift allowance.
    const validityMs = ttlMs - (ttlMs * DEFAULTS.driftFactor + 2);
    await vi.advanceTimersByTimeAsync(validityMs - 1);
    expect(signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(await redis.command('PTTL', 'distlock:{job}')).toBe(ttlMs - validityMs);
    await vi.advanceTimersByTimeAsync(ttlMs - validityMs + 1); // Redis: gone once past
    expect(await redis.command('PTTL', 'distlock:{job}')).toBe(-2);
  });

  it('keeps an auto-extended lock through fake minutes, and loses it at the deadline once the node stops answering', async () => {
    vi.useFakeTimers();
    const redis = new InMemoryRedis();
    const locker = lockerOn([redis]);
    const lock = await locker.acquire('job', { ttlMs: 1_000, autoExtend: true });
    await vi.advanceTimersByTimeAsync(600_000);
    expect(lock.signal.aborted).toBe(false);
    expect(await redis.command('PTTL', 'distlock:{job}')).toBeGreaterThan(0);
    redis.pause();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(String(lock.signal.reason)).toContain(`${redis.name}: no answer`);
  });

  it('loses the lock when the node restarts empty', async () => {
    const redis = new InMemoryRedis();
    const locker = lockerOn([redis]);
    const lock = await locker.acquire('job', { ttlMs: 10_000 });
    redis.restart();
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(lock.signal.aborted).toBe(true);
  });

  it('takes a Redlock majority over 3 nodes with one killed, and none with two', async () => {
    const nodes = [new InMemoryRedis(), new InMemoryRedis(), new InMemoryRedis()];
    const locker = lockerOn(nodes);
    nodes[0]?.kill();
    const lock = await locker.acquire('job', { ttlMs: 10_000 });
    expect(await nodes[1]?.command('EXISTS', 'distlock:{job}')).toBe(1);
    await lock.release();
    nodes[1]?.kill();
    const failed = await locker
      .acquire('job', { ttlMs: 10_000, waitMs: 0 })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(NoQuorumError);
    expect(String(failed)).toContain(`${nodes[0]?.name} is down`);
    // Restarted empty, they abstain until every lease they might have granted ran out.
    vi.useFakeTimers();
    nodes[0]?.restart();
    nodes[1]?.restart();
    await expect(locker.acquire('job', { ttlMs: 10_000, waitMs: 0 })).rejects.toThrow('abstains');
    await vi.advanceTimersByTimeAsync(20_000);
    await (await locker.acquire('job', { ttlMs: 10_000, waitMs: 0 })).release();
  });

  it('fails commands on a killed node as never sent, and says so in its own name', async () => {
    const redis = new InMemoryRedis({ name: 'orders-redis' });
    redis.kill();
    await expect(redis.send('PING', [])).rejects.toBeInstanceOf(NotSentError);
    await expect(redis.command('PING')).rejects.toThrow('orders-redis is down');
    expect(() => new InMemoryRedis({ name: '' })).toThrow(InvalidArgumentError);
    expect(() => new InMemoryRedis({ nmae: 'x' } as never)).toThrow('`nmae`');
  });
});
