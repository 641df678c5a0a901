/**
 * The simulated Redis Cluster (simulation/cluster.ts): what its masters answer while a slot
 * moves, as Redis 7.0 does, and that the slot-moves focus meets every redirection.
 */
import { describe, expect, it } from 'vitest';
import { SimCluster } from '../../simulation/cluster.js';
import { WorldNode } from '../../simulation/network.js';
import { Random } from '../../simulation/random.js';
import { runSchedule } from '../../simulation/schedule.js';
import { FULL_SHAPE } from '../../simulation/shape.js';
import { keySlot } from '../../src/driver/libraries.js';
import { SimulatedRedisNode } from '../../src/testing/in-memory/node.js';

function twoMasters() {
  const random = new Random(1);
  const cluster = new SimCluster([
    new WorldNode('a:1', random, 0, 0),
    new WorldNode('b:1', random, 0, 0),
  ]);
  const [a, b] = cluster.shards as [WorldNode, WorldNode];
  const slot = keySlot('{r}');
  const owner = cluster.ownerOf(slot);
  const other = owner === a ? b : a;
  const script = (...keys: string[]) => ['return 1', keys.length, ...keys];
  return { cluster, slot, owner, other, script };
}

describe('the simulated Redis Cluster', () => {
  it('answers MOVED from a master that does not serve the slot', () => {
    const { slot, owner, other } = twoMasters();
    expect(other.execute('SET', ['{r}a', 'v'])).toEqual({
      kind: 'error',
      value: `MOVED ${slot} ${owner.node.name}`,
    });
    expect(owner.execute('SET', ['{r}a', 'v'])).toEqual({ kind: 'status', value: 'OK' });
  });

  it('while a slot moves: runs what is all on the source, ASK once all moved, TRYAGAIN for keys on both sides', () => {
    const { cluster, slot, owner: from, other: to, script } = twoMasters();
    from.execute('SET', ['{r}a', 'v', 'PX', 1000]);
    from.execute('SET', ['{r}b', 'v']);
    cluster.beginMove(slot, to);
    expect(from.execute('EVAL', script('{r}a', '{r}b'))).toEqual({ kind: 'integer', value: 1n });
    // A key that does not exist passes for one that moved.
    expect(from.execute('EVAL', script('{r}a', '{r}c'))).toMatchObject({
      value: expect.stringMatching(/^TRYAGAIN /),
    });
    expect(cluster.stepMove()).toBe(false); // one key moved (with its TTL)
    expect(to.node.send('PTTL', ['{r}a'])).toMatchObject({ kind: 'integer' });
    expect(from.execute('EVAL', script('{r}a', '{r}b'))).toMatchObject({
      value: expect.stringMatching(/^TRYAGAIN /),
    });
    expect(cluster.stepMove()).toBe(false);
    const ask = { kind: 'error', value: `ASK ${slot} ${to.node.name}` };
    expect(from.execute('EVAL', script('{r}a', '{r}b'))).toEqual(ask);
    expect(from.execute('SET', ['{r}c', 'v', 'NX'])).toEqual(ask);
    // The importing master takes a command only right after ASKING, and one on several keys
    // only when it has them all.
    expect(to.execute('GET', ['{r}a'])).toEqual({
      kind: 'error',
      value: `MOVED ${slot} ${from.node.name}`,
    });
    expect(to.execute('GET', ['{r}a'], true)).toEqual({ kind: 'bulk', value: 'v' });
    expect(to.execute('EVAL', script('{r}a', '{r}b'), true)).toEqual({
      kind: 'integer',
      value: 1n,
    });
    expect(to.execute('EVAL', script('{r}a', '{r}c'), true)).toMatchObject({
      value: expect.stringMatching(/^TRYAGAIN /),
    });
    expect(cluster.stepMove()).toBe(true); // nothing left: the slot is the other master's
    expect(cluster.ownerOf(slot)).toBe(to);
    expect(from.execute('GET', ['{r}a'])).toEqual({
      kind: 'error',
      value: `MOVED ${slot} ${to.node.name}`,
    });
    expect(to.execute('GET', ['{r}b'])).toEqual({ kind: 'bulk', value: 'v' });
  });

  it('a key moved keeps the time it had left, by the new master clock', () => {
    let clockA = 1_700_000_000_000_000n;
    const clockB = clockA - 5_000_000n; // 5 s behind
    const a = new SimulatedRedisNode({ name: 'a', clockUs: () => clockA });
    const b = new SimulatedRedisNode({ name: 'b', clockUs: () => clockB });
    a.send('SET', ['{r}a', 'v', 'PX', 1000]);
    clockA += 100_000n;
    expect(a.migrateKey('{r}a', b)).toBe(true);
    expect(a.send('EXISTS', ['{r}a'])).toEqual({ kind: 'integer', value: 0n });
    expect(b.send('PTTL', ['{r}a'])).toEqual({ kind: 'integer', value: 900n });
    expect(b.send('GET', ['{r}a'])).toEqual({ kind: 'bulk', value: 'v' });
    expect(a.migrateKey('{r}a', b)).toBe(false); // gone from a
  });

  it('schedules of the slot-moves focus meet MOVED, ASK and TRYAGAIN, and keep every invariant', async () => {
    const seen = { MOVED: 0, ASK: 0, TRYAGAIN: 0 };
    for (let seed = 1; seed <= 5; seed++) {
      const result = await runSchedule(seed, { ...FULL_SHAPE, focus: 'slot-moves' });
      expect(result.violations).toEqual([]);
      expect(result.holdings).toBeGreaterThan(0);
      const end = result.log.at(-1) ?? '';
      for (const kind of Object.keys(seen) as (keyof typeof seen)[]) {
        seen[kind] += Number(new RegExp(`${kind}=(\\d+)`).exec(end)?.[1] ?? 0);
      }
    }
    expect(seen.MOVED).toBeGreaterThan(0);
    expect(seen.ASK).toBeGreaterThan(0);
    expect(seen.TRYAGAIN).toBeGreaterThan(0);
  });
});
