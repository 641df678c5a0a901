import { describe, expect, it } from 'vitest';
import { Locker, UnsafeNodeError } from '../../src/index.js';
import { FaultProxy } from '../../src/testing/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(1);
const locker = useLockers(fixture);

/** Sets the node's eviction policy (with a memory limit, as production nodes have). */
async function evicting(policy: string): Promise<void> {
  const admin = fixture().admin[0];
  await admin?.config('SET', 'maxmemory', '100mb');
  await admin?.config('SET', 'maxmemory-policy', policy);
}

describe('an eviction policy that may drop lock keys', () => {
  it('is reported as a warning event, and locking goes on', async () => {
    await evicting('allkeys-lru');
    const l = locker();
    const warnings: string[] = [];
    l.events.on('warning', ({ code, message }) => warnings.push(`${code}: ${message}`));
    await (await l.acquire('r', { ttlMs: 1_000 })).release();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^EVICTION_RISK: maxmemory-policy allkeys-lru .* noeviction/);
  });

  it('is a process warning when nobody listens (never silent)', async () => {
    await evicting('volatile-ttl'); // lock keys all have a TTL: volatile-* picks them too
    const seen: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => seen.push(String(warning.code));
    process.on('warning', onWarning);
    await (await locker().acquire('r', { ttlMs: 1_000 })).release();
    await new Promise((resolve) => setTimeout(resolve, 10)); // warnings come on the next tick
    process.off('warning', onWarning);
    expect(seen).toEqual(['EVICTION_RISK']);
  });

  it("rejects every acquisition with onEvictionRisk: 'refuse', writing nothing", async () => {
    await evicting('allkeys-random');
    const l = locker({ onEvictionRisk: 'refuse' });
    for (let i = 0; i < 2; i++) {
      const error = await l.acquire('r', { ttlMs: 1_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsafeNodeError);
      expect((error as UnsafeNodeError).code).toBe('UNSAFE_NODE');
    }
    expect(await fixture().admin[0]?.keys('*')).toEqual([]);
    // The refusal stands for reads too, as for `leader()`: it is all the check answers then.
    await expect(l.inspect('r')).rejects.toBeInstanceOf(UnsafeNodeError);
  });

  it("is refused even before a slow connection could be checked, with 'refuse'", async () => {
    await evicting('allkeys-lru');
    const proxy = await FaultProxy.start(fixture().redis.nodes[0]?.port ?? 0);
    // Every reply takes 300 ms: connecting (several round trips) outlasts the 500 ms that a
    // first acquisition waits for it, so the node's INFO cannot be read in time.
    proxy.set({ mode: 'delay', delayMs: 300 });
    const l = new Locker({ nodes: [proxy.url], onEvictionRisk: 'refuse', nodeTimeoutMs: 900 });
    try {
      const result = await l.tryAcquire('r', { ttlMs: 10_000 }).catch((e: unknown) => e);
      expect(result).toBeInstanceOf(Error); // before: granted, its INFO not yet read
      expect(await fixture().admin[0]?.exists('distlock:{r}')).toBe(0);
    } finally {
      await l.close();
      await proxy.close();
    }
  });

  it('cannot be checked when INFO is denied: a warning, or a refusal', async () => {
    const admin = fixture().admin[0];
    await admin?.call(
      'ACL',
      'SETUSER',
      'noinfo',
      'reset',
      'on',
      '>pw',
      '~*',
      '&*',
      '+@all',
      '-info',
    );
    const url = `redis://noinfo:pw@127.0.0.1:${fixture().redis.nodes[0]?.port}`;
    const warned = new Locker({ nodes: [url] });
    const refusing = new Locker({ nodes: [url], onEvictionRisk: 'refuse' });
    try {
      const warnings: { code: string; message: string }[] = [];
      warned.events.on('warning', ({ code, message }) => warnings.push({ code, message }));
      await (await warned.acquire('r', { ttlMs: 1_000 })).release();
      expect(warnings.map((w) => w.code)).toEqual(['EVICTION_UNCHECKED']);
      // Each mode's advice is one that locker can follow.
      expect(warnings[0]?.message).toMatch(/grant \+info/);
      expect(warnings[0]?.message).not.toMatch(/onEvictionRisk/);
      const error = await refusing.acquire('r', { ttlMs: 1_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsafeNodeError);
      expect((error as Error).message).toMatch(/cannot be read \(INFO is renamed or denied\)/);
      expect((error as Error).message).toMatch(/onEvictionRisk: 'warn'/);
    } finally {
      await Promise.all([warned.close(), refusing.close()]);
      await admin?.call('ACL', 'DELUSER', 'noinfo');
    }
  });

  it('is not reported for noeviction', async () => {
    await evicting('noeviction');
    const l = locker({ onEvictionRisk: 'refuse' });
    await (await l.acquire('r', { ttlMs: 1_000 })).release();
  });
});
