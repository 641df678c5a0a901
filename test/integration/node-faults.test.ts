import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { NoQuorumError } from '../../src/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const KEY = 'distlock:{r}';

const locker = useLockers(fixture);

afterEach(async () => {
  const { admin } = fixture();
  await Promise.all(admin.map((client) => client.replicaof('NO', 'ONE')));
  await Promise.all(admin.map((client) => client.config('SET', 'maxmemory', '0')));
});

describe('nodes that answer with errors', () => {
  it('counts READONLY replicas as failed votes, with the error', async () => {
    const { admin, redis } = fixture();
    const l = locker();
    const primary = redis.nodes[0]?.port as number;
    await admin[1]?.replicaof('127.0.0.1', primary);
    await admin[2]?.replicaof('127.0.0.1', primary);
    const error = await l.tryAcquire('r', { ttlMs: 5_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    const [first, ...replicas] = (error as NoQuorumError).nodes;
    expect(first?.outcome).toBe('yes');
    for (const node of replicas) {
      expect(node.outcome).toBe('error');
      expect(node.outcome === 'error' && node.error.message).toMatch(/^READONLY/);
    }
    expect((error as Error).cause).toBeInstanceOf(AggregateError);
    expect(await admin[0]?.exists(KEY)).toBe(0);
  });

  it('acquires past one node out of memory, and fails past two', async () => {
    const { admin } = fixture();
    const l = locker();
    await admin[0]?.config('SET', 'maxmemory', '1');
    const lock = await l.acquire('r', { ttlMs: 5_000, waitMs: 0 });
    expect(await lock.release()).toBe('released');

    await admin[1]?.config('SET', 'maxmemory', '1');
    const error = await l.tryAcquire('r', { ttlMs: 5_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    const messages = (error as NoQuorumError).nodes.map((n) =>
      n.outcome === 'error' ? n.error.message.slice(0, 3) : n.outcome,
    );
    expect(messages).toEqual(['OOM', 'OOM', 'yes']);
  });

  it('resigns a leadership on nodes out of memory (the release deletes first)', async () => {
    const { admin } = fixture();
    const election = locker().election('full', { leaseMs: 5_000 });
    const leadership = await election.campaign('a');
    await Promise.all(admin.map((client) => client.config('SET', 'maxmemory', '1')));
    // Marking the leader record ended must not come first: a full node refuses a script's
    // first write unless it is a delete.
    expect(await leadership.resign()).toBe('released');
    expect(await Promise.all(admin.map((a) => a.exists('distlock:{full}:election')))).toEqual([
      0, 0, 0,
    ]);
  });
});

describe('a node restarted without persistence', () => {
  // The hazard the Redlock authors guard against with delayed restarts or fsync'ed AOF. A
  // locker that knew the node sees its new run_id, and a new one its uptime and the other
  // nodes' lease records, and keeps it out for the longest lease (see node-identity.test.ts);
  // these controls show what happens where that check cannot act.
  it('at once, with the identity check off (restartGraceMs: 0), can hand a held lock to a second client', async () => {
    const { admin, redis } = fixture();
    const second = locker({ restartGraceMs: 0 });
    second.events.on('warning', () => {}); // it still warns about the restart
    await (await second.acquire('warm-up', { ttlMs: 5_000 })).release();
    await admin[2]?.set(KEY, 'other', 'PX', 10_000); // A gets nodes 0 and 1 only
    const a = await locker().acquire('r', { ttlMs: 5_000, waitMs: 0 });
    await redis.nodes[1]?.restart(); // forgets A's key
    await admin[2]?.del(KEY); // the other holder's key expires
    await delay(300); // the locker reconnects
    const b = await second.tryAcquire('r', { ttlMs: 5_000 });
    expect(b).not.toBeNull(); // nodes 1 and 2: a majority
    expect(a.remainingMs()).toBeGreaterThan(0); // ...while A still holds it: two holders
  });

  it('at once, with the lease records deleted by hand, can hand a held lock to a client that first meets the node after its restart', async () => {
    // A new locker tells a restarted node from one that has always been there only by the
    // other nodes' lease records (docs/redlock-and-safety.md, "Restarts without persistence").
    const { admin, redis } = fixture();
    await admin[2]?.set(KEY, 'other', 'PX', 10_000);
    const a = await locker().acquire('r', { ttlMs: 5_000, waitMs: 0 });
    await redis.nodes[1]?.restart();
    await admin[2]?.del(KEY);
    await Promise.all(admin.map((client) => client.del('distlock:longest-lease')));
    await delay(300);
    const b = await locker().tryAcquire('r', { ttlMs: 5_000 });
    expect(b).not.toBeNull();
    expect(a.remainingMs()).toBeGreaterThan(0);
  });

  it('after staying down longer than the TTL, cannot', async () => {
    const { admin, redis } = fixture();
    await admin[2]?.set(KEY, 'other', 'PX', 10_000);
    const a = await locker().acquire('r', { ttlMs: 600, waitMs: 0 });
    await redis.nodes[1]?.kill();
    await admin[2]?.del(KEY);
    const b = locker();
    await expect(b.tryAcquire('r', { ttlMs: 5_000 })).rejects.toBeInstanceOf(NoQuorumError);
    await delay(a.remainingMs() + 50); // the delayed restart: A's lease is over
    await redis.nodes[1]?.restart();
    const lock = await b.acquire('r', { ttlMs: 5_000, waitMs: 3_000 });
    expect(a.remainingMs()).toBe(0);
    await lock.release();
  });
});
