import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { IORedisConnection } from '../../src/driver/ioredis.js';
import { IDENTITY_RECHECK_MS } from '../../src/engine/node-identity.js';
import { type Locker, type LockerEvents, NoQuorumError } from '../../src/index.js';
import { FaultProxy } from '../../src/testing/index.js';
import { until } from '../../src/testing/until.js';
import { distlock } from '../support/cli.js';
import { useLockers, useRedis } from '../support/redis.js';

/**
 * A node votes as itself only (DESIGN invariant 12): its identity is read again whenever its
 * connection is re-established, and a node that restarted (another run_id) abstains until
 * every lease it could have granted has run out. Real redis-server processes, real restarts.
 */
const fixture = useRedis(5);
const locker = useLockers(fixture);
const KEY = 'distlock:{r}';
/** Short leases keep the waits short; every holder and contender uses the same TTL. */
const TTL_MS = 1_500;

const proxies: FaultProxy[] = [];
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

type Warning = LockerEvents['warning'][0];

/** Collects the locker's warnings (and keeps them from becoming process warnings). */
function warningsOf(l: Locker): Warning[] {
  const warnings: Warning[] = [];
  l.events.on('warning', (w) => warnings.push(w));
  return warnings;
}

/** A lock and a release on another resource: the locker has read every node's identity. */
async function warmUp(l: Locker): Promise<void> {
  await (await l.acquire('warm-up', { ttlMs: TTL_MS })).release();
}

/** Waits until every node of `l` answers a lock again (its connections are back). */
async function reconnected(l: Locker): Promise<void> {
  await delay(300);
  await l.tryAcquire('probe', { ttlMs: TTL_MS }).then(
    (lock) => lock?.release(),
    () => undefined,
  );
}

/** The ids of the connections a server has (`CLIENT LIST`). */
async function clientIds(server: Redis): Promise<Set<string>> {
  return new Set(
    String(await server.client('LIST'))
      .split('\n')
      .map(idOf),
  );
}

/** The connection id of one `CLIENT LIST` line. */
function idOf(line: string): string {
  return /^id=(\d+) /.exec(line)?.[1] ?? '';
}

/** The message of node `index`'s failed vote. */
function voteError(error: unknown, index: number): string {
  const node = (error as NoQuorumError).nodes[index];
  return node?.outcome === 'error' ? node.error.message : String(node?.outcome);
}

describe('a node restarted without persistence, on a majority holder', () => {
  for (const n of [3, 5]) {
    it(`on ${n} masters, gets no second holder while the first holder's lease is valid`, async () => {
      const { admin, redis } = fixture();
      const nodes = redis.urls.slice(0, n);
      const quorum = Math.floor(n / 2) + 1;
      const second = locker({ nodes }); // a long-running client: it knows every node
      const warnings = warningsOf(second);
      await warmUp(second);
      // The first holder gets exactly a majority: the other nodes are taken by someone else.
      const others = admin.slice(quorum, n);
      await Promise.all(others.map((client) => client.set(KEY, 'other', 'PX', 60_000)));
      const first = await locker({ nodes }).acquire('r', { ttlMs: TTL_MS, waitMs: 0 });
      await redis.nodes[0]?.restart(); // one of its nodes forgets it
      const restartedAt = performance.now();
      await Promise.all(others.map((client) => client.del(KEY)));

      const lock = await second.acquire('r', { ttlMs: TTL_MS, waitMs: TTL_MS + 3_000 });
      const afterMs = performance.now() - restartedAt;
      // Before: acquired ~0.1 s after the restart, the first holder with most of its lease left.
      expect(first.remainingMs(), `acquired ${Math.round(afterMs)} ms after the restart`).toBe(0);
      expect(warnings).toContainEqual(
        expect.objectContaining({ node: redis.urls[0]?.slice(8), code: 'NODE_IDENTITY_CHANGED' }),
      );
      await lock.release();
    });
  }

  it('names the cause in the error of an acquisition that finds it abstaining', async () => {
    const { redis } = fixture();
    const nodes = redis.urls.slice(0, 3);
    const l = locker({ nodes });
    warningsOf(l);
    await warmUp(l);
    await Promise.all([redis.nodes[0]?.restart(), redis.nodes[1]?.restart()]);
    await reconnected(l);
    const error = await l.tryAcquire('r', { ttlMs: TTL_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    for (const index of [0, 1]) {
      expect(voteError(error, index)).toMatch(
        /its run_id changed.*abstains until every lease .* has run out, the 1500 ms restart grace \(the longest lease on record on the nodes\)/,
      );
    }
    expect(voteError(error, 2)).toBe('yes');
  });

  it('still extends and releases a lock held across the restart', async () => {
    const { redis } = fixture();
    const nodes = redis.urls.slice(0, 3);
    const l = locker({ nodes });
    warningsOf(l);
    const lock = await l.acquire('r', { ttlMs: TTL_MS, waitMs: 0 });
    await redis.nodes[0]?.restart();
    await delay(300);
    await lock.extend(); // nodes 1 and 2 still hold it; node 0 says it does not
    expect(lock.remainingMs()).toBeGreaterThan(TTL_MS / 2);
    expect(await lock.release()).toBe('released');
  });

  it('with restartGraceMs, keeps a client started after the restart out too', async () => {
    const { admin, redis } = fixture();
    const nodes = redis.urls.slice(0, 3);
    await admin[2]?.set(KEY, 'other', 'PX', 60_000);
    const first = await locker({ nodes }).acquire('r', { ttlMs: TTL_MS, waitMs: 0 });
    await redis.nodes[0]?.restart();
    await admin[2]?.del(KEY);
    // A new process cannot know that node 0 restarted; only its uptime tells.
    const late = locker({ nodes, restartGraceMs: TTL_MS });
    const error = await late.tryAcquire('r', { ttlMs: TTL_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect(voteError(error, 0)).toMatch(/started \d\.\d s ago .* abstains until it has been up/);
    const lock = await late.acquire('r', { ttlMs: TTL_MS, waitMs: TTL_MS + 3_000 });
    expect(first.remainingMs()).toBe(0);
    await lock.release();
  });

  it('with restartGraceMs: 0 (the check off), hands the lock to a second holder: negative control', async () => {
    const { admin, redis } = fixture();
    const nodes = redis.urls.slice(0, 3);
    const second = locker({ nodes, restartGraceMs: 0 });
    warningsOf(second);
    await warmUp(second);
    await admin[2]?.set(KEY, 'other', 'PX', 60_000);
    const first = await locker({ nodes }).acquire('r', { ttlMs: TTL_MS, waitMs: 0 });
    await redis.nodes[0]?.restart();
    await admin[2]?.del(KEY);
    const lock = await second.acquire('r', { ttlMs: TTL_MS, waitMs: 1_000 });
    expect(first.remainingMs()).toBeGreaterThan(0); // two holders at once
    await lock.release();
  });

  it('is read again on a connection that does not report reconnects', async () => {
    const { admin, redis } = fixture();
    const urls = redis.urls.slice(0, 3);
    // A custom RedisConnection without `generation`: only failures and time tell.
    const custom = urls.map((url) => {
      const inner = IORedisConnection.fromUrl(url);
      return {
        name: inner.name,
        send: inner.send.bind(inner),
        close: () => inner.close(),
      };
    });
    try {
      const second = locker({ nodes: custom });
      warningsOf(second);
      await warmUp(second);
      await admin[2]?.set(KEY, 'other', 'PX', 60_000);
      const first = await locker({ nodes: urls }).acquire('r', { ttlMs: TTL_MS, waitMs: 0 });
      await redis.nodes[0]?.restart();
      await admin[2]?.del(KEY);
      // Reconnected, and no command of `second` saw the connection fail: only the periodic
      // read can tell (a restart that votes within that second is the documented limit).
      await delay(IDENTITY_RECHECK_MS);
      const lock = await second.acquire('r', { ttlMs: TTL_MS, waitMs: TTL_MS + 3_000 });
      expect(first.remainingMs()).toBe(0);
      await lock.release();
    } finally {
      await Promise.all(custom.map((c) => c.close()));
    }
  });
});

describe('a node restarted empty, seen by other lockers and processes (the lease records)', () => {
  const urls = (nodes: readonly string[]) => nodes.flatMap((url) => ['--redis', url]);
  /** A lease longer than the contenders' own: theirs alone would not cover it. */
  const LONG_TTL_MS = 4_000;

  /** `holder` holds "r" on exactly nodes 0 and 1 of 3; node 0 then restarts empty. */
  async function holdThenRestart(holder: Locker) {
    const { admin, redis } = fixture();
    await admin[2]?.set(KEY, 'other', 'PX', 60_000);
    const first = await holder.acquire('r', { ttlMs: LONG_TTL_MS, waitMs: 0 });
    await redis.nodes[0]?.restart();
    await admin[2]?.del(KEY);
    return first;
  }

  it('keeps a locker made after the restart out while the lease may be valid, by default', async () => {
    const nodes = fixture().redis.urls.slice(0, 3);
    const first = await holdThenRestart(locker({ nodes }));
    // A new process: it never saw node 0 before; its uptime and the records tell.
    const late = locker({ nodes });
    const error = await late.tryAcquire('r', { ttlMs: TTL_MS }).catch((e: unknown) => e);
    // Before: acquired about 0.1 s after the restart, with the first lease 3.9 s from its end.
    expect(error).toBeInstanceOf(NoQuorumError);
    expect(voteError(error, 0)).toMatch(
      /started \d\.\d s ago .* until it has been up for the 4000 ms restart grace \(the longest lease on record on the nodes\)/,
    );
    const lock = await late.acquire('r', { ttlMs: TTL_MS, waitMs: LONG_TTL_MS + 3_000 });
    expect(first.remainingMs()).toBe(0);
    await lock.release();
  });

  it('counts a restart from its latest start: a whole-second uptime may say 1 s at 0.1 s', async () => {
    const nodes = fixture().redis.urls.slice(0, 3);
    // Restarted late in a second of the clock and read early in the next: Redis subtracts
    // whole seconds, so it says up 1 s although it started about 0.2 s before.
    await delay(1_800 - (Date.now() % 1_000));
    const first = await holdThenRestart(locker({ nodes }));
    await delay(1_050 - (Date.now() % 1_000));
    const late = locker({ nodes });
    const lock = await late.acquire('r', { ttlMs: TTL_MS, waitMs: LONG_TTL_MS + 3_000 });
    // Before: acquired when up 3 s by its word, the first lease 0.7 s from its end.
    expect(first.remainingMs()).toBe(0);
    await lock.release();
  });

  it("keeps a running locker on shorter leases out for another locker's longer lease", async () => {
    const nodes = fixture().redis.urls.slice(0, 3);
    const short = locker({ nodes }); // 1.5 s leases, long known to every node
    warningsOf(short);
    await warmUp(short);
    const first = await holdThenRestart(locker({ nodes }));
    const lock = await short.acquire('r', { ttlMs: TTL_MS, waitMs: LONG_TTL_MS + 3_000 });
    // Before: acquired 1.5 s after the restart (its own TTL), the first lease 2.5 s from its end.
    expect(first.remainingMs()).toBe(0);
    await lock.release();
  });

  it('keeps `distlock run` (a fresh process each time) out too', async () => {
    const f = fixture();
    const nodes = f.redis.urls.slice(0, 3);
    const first = await holdThenRestart(locker({ nodes }));
    const run = distlock(['run', '-n', ...urls(nodes), 'r', '--', 'true'], { DISTLOCK_REDIS: '' });
    const { code, stderr } = await run.done;
    // Before: it ran its command, exit 0, with the first lease about 3.9 s from its end.
    expect(first.remainingMs()).toBeGreaterThan(0);
    expect(code, stderr).toBe(69);
    expect(stderr).toMatch(/started \d\.\d s ago .* the 4000 ms restart grace/);
    // The check off, by the variable: it runs its command (a negative control).
    const unchecked = distlock(['run', '-n', ...urls(nodes), 'r', '--', 'true'], {
      DISTLOCK_REDIS: '',
      DISTLOCK_RESTART_GRACE: '0',
    });
    expect((await unchecked.done).code).toBe(0);
    expect(first.remainingMs()).toBeGreaterThan(0);
  });

  it('judges a node first reached after the others on the records as they are then', async () => {
    const { admin, redis } = fixture();
    const proxy = await FaultProxy.start(redis.nodes[0]?.port as number);
    proxies.push(proxy);
    proxy.set({ mode: 'reset' });
    // C starts while node 0 is out of its reach: it reads the other records (its own 1.5 s).
    const c = locker({ nodes: [proxy.url, ...redis.urls.slice(1, 3)] });
    warningsOf(c);
    await warmUp(c);
    // Later another process takes a longer lease on exactly nodes 0 and 1.
    await admin[2]?.set(KEY, 'other', 'PX', 60_000);
    // Node 0 is now up longer than C's own records say, even read in whole seconds.
    await delay(TTL_MS + 2_000);
    const first = await locker({ nodes: redis.urls.slice(0, 3) }).acquire('r', {
      ttlMs: LONG_TTL_MS,
      waitMs: 0,
    });
    await redis.nodes[0]?.restart();
    await admin[2]?.del(KEY);
    proxy.set({ mode: 'pass' }); // C reaches node 0 for the first time
    const lock = await c.acquire('r', { ttlMs: TTL_MS, waitMs: LONG_TTL_MS + 3_000 });
    // Before: acquired about 1.9 s after the restart, judged on C's 1.5 s of records.
    expect(first.remainingMs()).toBe(0);
    await lock.release();
  });

  it('takes --restart-grace and $DISTLOCK_RESTART_GRACE, and names a bad one before any I/O', async () => {
    const nodes = fixture().redis.urls.slice(0, 3);
    const first = await holdThenRestart(locker({ nodes }));
    // A grace given explicitly replaces the records: 1 ms is over at once.
    const short = distlock(
      ['run', '-w', '3s', '--restart-grace', '1ms', ...urls(nodes), 'r', '--', 'true'],
      { DISTLOCK_REDIS: '' },
    );
    const shortDone = await short.done;
    expect(shortDone.code, shortDone.stderr).toBe(0);
    expect(first.remainingMs()).toBeGreaterThan(0);
    const bad = await distlock(['run', '-n', 'r', '--', 'true'], {
      DISTLOCK_RESTART_GRACE: 'soon',
    }).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/\$DISTLOCK_RESTART_GRACE: invalid duration "soon"/);
  });
});

describe('a node name re-pointed at another listed server', () => {
  it('does not count that server twice', async () => {
    const { admin, redis } = fixture();
    const [a, , c] = redis.nodes;
    const proxy = await FaultProxy.start(c?.port as number);
    proxies.push(proxy);
    const nodes = [redis.urls[0], redis.urls[1], proxy.url] as string[];
    const first = locker({ nodes });
    const warnings = warningsOf(first);
    await warmUp(first);
    // Another client holds the lock on B and C, a real majority.
    await admin[0]?.set(KEY, 'other', 'PX', 60_000);
    const holder = await locker({ nodes }).acquire('r', { ttlMs: 10_000, waitMs: 0 });
    await admin[0]?.del(KEY);
    proxy.retarget(a?.port as number); // the third name now reaches A
    await reconnected(first);

    // Before: acquired, with A's vote counted twice (the second through the proxy).
    const error = await first.tryAcquire('r', { ttlMs: 10_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect(voteError(error, 2)).toMatch(/now reaches the same server as nodes\[0\]/);
    expect(holder.remainingMs()).toBeGreaterThan(0);
    expect(warnings).toContainEqual(
      expect.objectContaining({ node: proxy.url.slice(8), code: 'NODE_DUPLICATE' }),
    );
  });
});

describe('an acquisition beside a read, while a node is asked which server it is', () => {
  it("waits for that node no longer than its own per-node timeout, not the read's", async () => {
    const { admin, redis } = fixture();
    const proxy = await FaultProxy.start(redis.nodes[2]?.port as number);
    proxies.push(proxy);
    const l = locker({ nodes: [redis.urls[0], redis.urls[1], proxy.url] as string[] });
    await warmUp(l);
    // The third node reconnects, then answers everything 2 s late: it must say which server
    // it is again before it votes. A read of a 100 s election asks it with that lease's
    // per-node timeout (500 ms); an acquisition of TTL_MS allows 20 ms.
    const server = admin[2] as (typeof admin)[number];
    const before = await clientIds(server);
    proxy.set({ mode: 'reset' });
    await delay(50);
    proxy.set({ mode: 'pass' });
    // The locker's client is back once a new connection ran its ready check (INFO).
    await until(
      'the locker to connect again',
      async () => {
        const list = String(await server.client('LIST')).split('\n');
        const back = list.some((line) => line.includes('cmd=info') && !before.has(idOf(line)));
        return back ? { done: true } : { reason: 'no new connection that ran INFO' };
      },
      10_000,
    );
    await delay(100); // its answer reaches the client
    proxy.set({ mode: 'delay', delayMs: 2_000 });
    const read = l.election('jobs', { leaseMs: 100_000 }).leader();
    const acquiring = l.tryAcquire('r', { ttlMs: TTL_MS });
    const first = await Promise.race([
      read.then(() => 'read'),
      acquiring.then(() => 'acquisition'),
    ]);
    // Before: the acquisition waited with the read's 500 ms, and settled after it.
    expect(first).toBe('acquisition');
    const lock = await acquiring;
    expect(lock?.remainingMs()).toBeGreaterThan(0); // on the two nodes that vote
    await expect(read).resolves.toBeNull();
    await lock?.release();
  });
});

describe('a node name re-pointed at another server that has the keys', () => {
  it("does not count towards an election's leader, in leader() and list() alike", async () => {
    const { admin, redis } = fixture();
    const [, , c, d] = redis.nodes;
    const proxy = await FaultProxy.start(c?.port as number);
    proxies.push(proxy);
    const nodes = [redis.urls[0], redis.urls[1], proxy.url] as string[];
    const reader = locker({ nodes });
    const leadership = await locker({ nodes }).election('jobs').campaign('a');
    expect(await reader.election('jobs').leader()).toMatchObject({ value: 'a' });
    // The third name now reaches D, which has C's copy of the leadership (as a replica
    // promoted in a failover would). D may miss a later release, so its view does not count
    // until every lease it could have granted has run out.
    const keys = ['distlock:{jobs}:election', 'distlock:{jobs}:election:leader'];
    for (const key of keys) {
      const dump = (await admin[2]?.dumpBuffer(key)) as Buffer;
      const ttl = (await admin[2]?.pttl(key)) as number; // -1: the record never expires
      await admin[3]?.restore(key, Math.max(ttl, 0), dump);
    }
    proxy.retarget(d?.port as number);
    await reconnected(reader);
    const listed = async () => {
      const found = [];
      for await (const resource of reader.list({ match: 'jobs' })) found.push(resource);
      return found;
    };
    // A and B name 'a'; D is left out, and the listing says why.
    const [election] = await listed();
    expect(election).toMatchObject({ kind: 'election', held: true, leader: 'a' });
    expect(election?.unreachable).toEqual([
      {
        node: proxy.url.slice('redis://'.length),
        error: expect.objectContaining({
          message: expect.stringMatching(/answers as another server.*abstains/),
        }),
      },
    ]);
    // A loses the leadership: only B and D still show 'a', which is no majority of the
    // views that count. Before: list() counted D's and named 'a' the leader.
    await admin[0]?.del(...keys);
    expect(await reader.election('jobs').leader()).toBeNull();
    expect(await listed()).toEqual([]);
    await leadership.resign();
  });
});

describe('a single node', () => {
  it('warns, naming the node, when it restarted, and goes on locking', async () => {
    const { redis } = fixture();
    const l = locker({ nodes: redis.urls.slice(0, 1) });
    const warnings = warningsOf(l);
    await warmUp(l);
    await redis.nodes[0]?.restart();
    await delay(300);
    const lock = await l.acquire('r', { ttlMs: TTL_MS, waitMs: 1_000 });
    await lock.release();
    // The warning comes from a read in the background: it may follow the lock by a moment.
    await delay(100);
    expect(warnings).toEqual([
      expect.objectContaining({
        node: redis.urls[0]?.slice(8),
        code: 'NODE_IDENTITY_CHANGED',
        message: expect.stringMatching(/run_id changed .* give restartGraceMs/),
      }),
    ]);
  });

  it('with restartGraceMs, abstains after its restart as on several nodes', async () => {
    const { redis } = fixture();
    const l = locker({ nodes: redis.urls.slice(0, 1), restartGraceMs: TTL_MS });
    warningsOf(l);
    // A fresh node: up for less than the grace.
    await redis.nodes[0]?.restart();
    const young = await l.tryAcquire('r', { ttlMs: TTL_MS }).catch((e: unknown) => e);
    expect(young).toBeInstanceOf(NoQuorumError);
    const lock = await l.acquire('r', { ttlMs: TTL_MS, waitMs: TTL_MS + 3_000 });
    await lock.release();
    await redis.nodes[0]?.restart();
    await delay(300);
    const error = await l.tryAcquire('r', { ttlMs: TTL_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect(voteError(error, 0)).toMatch(/its run_id changed/);
  });
});
