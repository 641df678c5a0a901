import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  DEFAULTS,
  InvalidArgumentError,
  IORedisConnection,
  type Leader,
  type Leadership,
  NoQuorumError,
} from '../../src/index.js';
import { proclaimScript } from '../../src/kinds/election/lua/proclaim.js';
import { releaseScript } from '../../src/kinds/mutex/lua/release.js';
import { driftMs } from '../../src/quorum/validity.js';
import { checkHistory, FaultProxy, type Holding } from '../../src/testing/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);
const now = () => performance.now();

/** Every state an observer yields, with when it saw it. */
function watch(iterable: AsyncIterable<Leader | null>) {
  const seen: { at: number; leader: Leader | null }[] = [];
  const done = (async () => {
    for await (const leader of iterable) seen.push({ at: now(), leader });
  })();
  /** Resolves when a state matching `wanted` is seen (from the `from`th on), with when. */
  const until = async (wanted: (leader: Leader | null) => boolean, withinMs: number, from = 0) => {
    const deadline = now() + withinMs;
    for (;;) {
      const found = seen.slice(from).find((s) => wanted(s.leader));
      if (found) return found.at;
      if (now() > deadline) throw new Error(`not observed within ${withinMs} ms`);
      await delay(5);
    }
  };
  return { seen, done, until };
}

/**
 * Late copies of leader 'a''s requests, re-sent by a client library and held up on the way,
 * landing on every node: its take (`holds`, each node's hold of it, for a lease of 3 s), then
 * its proclaim of `term`. Resolves with each node's reply to the proclaim.
 */
function lateTakeAndProclaim(
  admin: ReturnType<typeof fixture>['admin'],
  key: string,
  holds: readonly (string | null)[],
  term: bigint,
): Promise<number[]> {
  return Promise.all(
    admin.map(async (a, i) => {
      const hold = holds[i] as string;
      await a.set(key, hold, 'PX', 3_000);
      const at = hold.lastIndexOf(':');
      return proclaimScript.run(
        IORedisConnection.of(a),
        {
          key,
          leaderKey: `${key}:leader`,
          token: hold.slice(0, at),
          attempt: Number(hold.slice(at + 1)),
          term,
          version: 1,
          value: 'a',
          channel: `${key}:changes`,
        },
        1_000,
      );
    }),
  );
}

describe('locker.election', () => {
  it('rejects bad timings synchronously, naming the field', () => {
    const l = locker();
    const bad = (options: object, field: string) => {
      expect(() => l.election('e', options)).toThrow(InvalidArgumentError);
      expect(() => l.election('e', options)).toThrow(field);
    };
    bad({ leaseMs: 2_000, renewDeadlineMs: 2_000 }, 'renewDeadlineMs');
    bad({ leaseMs: 2_000, renewDeadlineMs: 1_000, retryMs: 1_000 }, 'retryMs');
    bad({ retryMs: 0 }, 'retryMs');
    bad({ leaseMs: -1 }, 'leaseMs');
    bad({ lease: 1 }, 'lease');
    expect(() => l.election('', {})).toThrow('name');
    const election = l.election('e');
    expect(election.timings).toEqual({ leaseMs: 15_000, renewDeadlineMs: 10_000, retryMs: 2_000 });
    expect(() => election.campaign(7 as unknown as string)).toThrow('value');
    expect(() => election.campaign('v', { signal: 1 as unknown as AbortSignal })).toThrow('signal');
  });

  // Hand-over path: the release, the wake-up, the waiter's confirming attempt and its
  // proclaim, each at most one per-node timeout, plus scheduling on a loaded machine.
  const nodeTimeoutMs = 100;
  const handOverMs = 4 * nodeTimeoutMs + 200;
  // Long enough that neither the election's timer nor a waiter's polling (at least half of
  // retryDelayMs) can explain a change seen within the bounds below.
  const timings = { leaseMs: 3_000, renewDeadlineMs: 2_000, retryMs: 1_500 };
  const slow = { nodeTimeoutMs, retryDelayMs: 2_000 };

  for (const nodes of [1, 3]) {
    it(`resign hands over at once, terms grow, observers see each change (${nodes} node(s))`, async () => {
      const urls = fixture().redis.urls.slice(0, nodes);
      const [a, b, c] = [1, 2, 3].map(() => locker({ nodes: urls, ...slow }));
      const election = (l: typeof a) => (l as NonNullable<typeof a>).election('jobs', timings);
      const observer = watch(election(c).observe());
      await observer.until((l) => l === null, handOverMs);

      const first = await election(a).campaign('a');
      expect(await election(c).leader()).toEqual({ value: 'a', term: first.term });
      const waiting = election(b).campaign('b');
      let changedAt = now();
      expect((await observer.until((l) => l?.value === 'a', handOverMs)) - changedAt).toBeLessThan(
        handOverMs,
      );

      changedAt = now();
      await first.proclaim('a2');
      const seenAt = await observer.until((l) => l?.value === 'a2', handOverMs);
      expect(seenAt - changedAt).toBeLessThan(handOverMs); // over pub/sub, not the timer
      expect(first.value).toBe('a2');

      const resignedAt = now();
      expect(await first.resign()).toBe('released');
      const second: Leadership = await waiting;
      expect(now() - resignedAt).toBeLessThan(handOverMs);
      expect(second.term).toBeGreaterThan(first.term);
      expect((await observer.until((l) => l?.value === 'b', handOverMs)) - resignedAt).toBeLessThan(
        handOverMs,
      );
      expect(first.signal.aborted).toBe(false); // resigning is not a loss
      await expect(first.proclaim('again')).rejects.toThrow('resigned');

      const releasedAt = now();
      const before = observer.seen.length;
      await second.resign();
      const noneAt = await observer.until((l) => l === null, handOverMs, before);
      expect(noneAt - releasedAt).toBeLessThan(handOverMs);
      expect(await election(a).leader()).toBeNull();
      const terms = observer.seen.flatMap((s) => (s.leader ? [s.leader.term] : []));
      expect(terms).toEqual([...terms].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
      await c?.close();
      await observer.done; // the locker's close ends the iteration
    });
  }

  it('a campaign stops on its signal and on close; a leader whose locker closes hands over', async () => {
    const urls = fixture().redis.urls;
    const [a, b, c] = [1, 2, 3].map(() => locker({ nodes: urls, ...slow }));
    const election = (l: typeof a) => (l as NonNullable<typeof a>).election('stop', timings);
    const leadership = await election(a).campaign('a');
    const giveUp = new AbortController();
    const aborted = election(b).campaign('b', { signal: giveUp.signal });
    const closed = election(c).campaign('c');
    const next = election(b).campaign('b2');
    await delay(50);
    giveUp.abort();
    await expect(aborted).rejects.toMatchObject({ code: 'ABORTED' });
    const closing = expect(closed).rejects.toMatchObject({ code: 'LOCKER_CLOSED' });
    await c?.close();
    await closing;
    const closedAt = now();
    await a?.close(); // releases, so the candidate still in line leads at once
    expect(leadership.signal.reason).toMatchObject({ code: 'LOCK_LOST' });
    const second = await next;
    expect(now() - closedAt).toBeLessThan(handOverMs);
    expect(second.term).toBeGreaterThan(leadership.term);
    await second.resign();
  });

  it('a resigned leader stays resigned when a late copy of its own take puts its hold back', async () => {
    const { admin } = fixture();
    const election = locker().election('late-copy', timings);
    const leadership = await election.campaign('a');
    const key = 'distlock:{late-copy}:election';
    const holds = await Promise.all(admin.map((a) => a.get(key)));
    expect(await leadership.resign()).toBe('released');
    // The take, re-sent by a client library and held up on the way, lands after the resign
    // on every node: the same token and attempt, for a whole lease.
    await Promise.all(admin.map((a, i) => a.set(key, holds[i] as string, 'PX', timings.leaseMs)));
    // Before: the leader record still named that hold, so every node read 'a' as leader.
    expect(await election.leader()).toBeNull();
    // A new leader is read as usual once it proclaims.
    await Promise.all(admin.map((a) => a.del(key)));
    const next = await election.campaign('b');
    expect((await election.leader())?.value).toBe('b');
    await next.resign();
  });

  it('a resigned leader stays resigned where its hold had run out, when late copies of its take and proclaim land', async () => {
    const { admin } = fixture();
    const election = locker().election('ran-out', timings);
    const key = 'distlock:{ran-out}:election';
    const leadership = await election.campaign('a');
    const holds = await Promise.all(admin.map((a) => a.get(key)));
    // The hold ran out on every node before the resign (the leader was paused, say), and
    // node 0 never got the proclaim: its record is gone.
    await Promise.all(admin.map((a) => a.del(key)));
    await admin[0]?.del(`${key}:leader`);
    expect(await leadership.resign()).toBe('not-held');
    // Then the take and the proclaim, re-sent by a client library and held up on the way,
    // land on every node.
    const proclaimed = await lateTakeAndProclaim(admin, key, holds, leadership.term);
    // Before: a release that found no hold left no end mark, so the proclaim stood on every
    // node (1, 1, 1) and every node read 'a' as leader again.
    expect(proclaimed).toEqual([0, 0, 0]);
    expect(await election.leader()).toBeNull();
    await Promise.all(admin.map((a) => a.del(key)));
    const next = await election.campaign('b');
    expect(await election.leader()).toMatchObject({ value: 'b', term: next.term });
    await next.resign();
  });

  it("a resigned candidate stays resigned where a later holder's release found no hold: that release keeps the candidate's end mark", async () => {
    const { admin } = fixture();
    const election = locker().election('kept-mark', timings);
    const key = 'distlock:{kept-mark}:election';
    const record = `${key}:leader`;
    const on = (i: number) => IORedisConnection.of(admin[i] as NonNullable<(typeof admin)[0]>);
    const proclaim = (i: number, token: string, term: bigint) =>
      proclaimScript.run(
        on(i),
        {
          key,
          leaderKey: record,
          token,
          attempt: 1,
          term,
          version: 1,
          value: token,
          channel: `${key}:changes`,
        },
        1_000,
      );
    const release = (i: number, token: string) =>
      releaseScript.run(on(i), { key, token, attempt: 1, announce: true, record }, 1_000);
    // Candidate x holds every node; its proclaim lands on node 2 only (the copies to nodes 0
    // and 1 are held up), so its campaign steps down and its release marks every node.
    await Promise.all(admin.map((a) => a.set(key, 'x:1', 'PX', timings.leaseMs)));
    expect(await proclaim(2, 'x', 5n)).toBe(1);
    expect(await Promise.all([0, 1, 2].map((i) => release(i, 'x')))).toEqual([1, 1, 1]);
    // Candidate c takes nodes 1 and 2 (its take to node 0 timed out) and gives the lock back
    // before it proclaims: its release reaches every node, and finds no hold on node 0.
    await Promise.all([1, 2].map((i) => admin[i]?.set(key, 'c:1', 'PX', timings.leaseMs)));
    expect(await Promise.all([0, 1, 2].map((i) => release(i, 'c')))).toEqual([0, 1, 1]);
    // Before: node 0's mark became c's too, the late take and proclaim of x stood on nodes 0
    // and 1, and leader() named x. Node 1's mark is still replaced (a hold released on a
    // record that is not the marked leader's own: docs/election.md, still open).
    expect(await admin[0]?.hget(record, 'ended')).toBe('x');
    await Promise.all([0, 1].map((i) => admin[i]?.set(key, 'x:1', 'PX', timings.leaseMs)));
    expect(await proclaim(0, 'x', 5n)).toBe(0);
    await proclaim(1, 'x', 5n);
    expect(await election.leader()).toBeNull();
    await Promise.all(admin.map((a) => a.del(key, record)));
  });

  it('a resigned leader stays resigned when a later holder gives the lock back before it proclaims', async () => {
    const { admin } = fixture();
    const election = locker().election('given-back', timings);
    const key = 'distlock:{given-back}:election';
    const leadership = await election.campaign('a');
    const holds = await Promise.all(admin.map((a) => a.get(key)));
    expect(await leadership.resign()).toBe('released');
    // Another campaign is handed the lock and gives it back before it proclaims (its wait
    // aborted): a holder's release of the election's lock, with the record still a's.
    await Promise.all(admin.map((a) => a.set(key, 'another:1', 'PX', timings.leaseMs)));
    const released = await Promise.all(
      admin.map((a) =>
        releaseScript.run(
          IORedisConnection.of(a),
          { key, token: 'another', attempt: 1, announce: true, record: `${key}:leader` },
          1_000,
        ),
      ),
    );
    expect(released).toEqual([1, 1, 1]);
    // Then a's own take, re-sent and held up on the way, lands on every node.
    await Promise.all(admin.map((a, i) => a.set(key, holds[i] as string, 'PX', timings.leaseMs)));
    // Before: the second release had marked the record ended for its own token, not a's, so
    // every node read 'a' as leader again.
    expect(await election.leader()).toBeNull();
    await Promise.all(admin.map((a) => a.del(key)));
  });

  it('a resigned leader stays resigned when late copies of its take and proclaim land after a later leadership ended', async () => {
    const { admin } = fixture();
    const election = locker().election('older-term', timings);
    const key = 'distlock:{older-term}:election';
    const first = await election.campaign('a');
    const holds = await Promise.all(admin.map((a) => a.get(key)));
    expect(await first.resign()).toBe('released');
    const second = await election.campaign('b');
    expect(second.term).toBeGreaterThan(first.term);
    expect(await second.resign()).toBe('released');
    // Both of a's requests, re-sent by a client library and held up on the way, land now on
    // every node: its take, then its proclaim (the record's end mark is b's, not a's).
    const proclaimed = await lateTakeAndProclaim(admin, key, holds, first.term);
    // Before: the proclaim wrote a's term over b's, and every node read 'a' as leader again.
    expect(proclaimed).toEqual([-1, -1, -1]);
    expect(await election.leader()).toBeNull();
    await Promise.all(admin.map((a) => a.del(key)));
    const third = await election.campaign('c');
    expect(await election.leader()).toMatchObject({ value: 'c', term: third.term });
    await third.resign();
  });

  it('a campaign whose terms went back below a recorded term steps down once, then draws above it', async () => {
    const { admin } = fixture();
    const election = locker().election('terms-back', timings);
    const key = 'distlock:{terms-back}:election';
    const first = await election.campaign('a');
    expect(await first.resign()).toBe('released');
    // The counters were deleted while the records stayed (what docs/election.md warns of):
    // every node's record holds a term the next draws start far below.
    const recorded = first.term + 1_000n;
    await Promise.all(
      admin.map((a) =>
        a.multi().del(`${key}:fence`).hset(`${key}:leader`, 'term', String(recorded)).exec(),
      ),
    );
    let rounds = 0;
    const warned: string[] = [];
    const l = locker();
    l.events.on('acquired', ({ resource }) => {
      if (resource === 'terms-back') rounds++;
    });
    l.events.on('warning', ({ node, code }) => {
      if (code === 'FENCE_COUNTER_BEHIND') warned.push(node);
    });
    const next = await l.election('terms-back', timings).campaign('b');
    // A term above the recorded one stands (before: 1). The refused proclaim raised the
    // counters to the recorded term, so the second round draws above it (before: a round,
    // each a take, a refused proclaim and a release, for each of the 1,000 terms behind).
    expect(next.term).toBeGreaterThan(recorded);
    expect(rounds).toBe(2);
    // Loud, once per node: each says its counter went back (all three kept the record).
    expect(warned.sort()).toEqual([...l.nodes].sort());
    expect(await election.leader()).toMatchObject({ value: 'b', term: next.term });
    await next.resign();
  });

  it('a resigned leader is not read back from servers that failed over before its release', async () => {
    const { admin, redis } = fixture();
    const election = locker().election('failed-over', timings);
    const leadership = await election.campaign('a');
    const key = 'distlock:{failed-over}:election';
    const before = await Promise.all(
      admin.map(async (a) => ({
        hold: await a.get(key),
        record: await a.hgetall(`${key}:leader`),
      })),
    );
    expect(await leadership.resign()).toBe('released');
    // Two servers are replaced by replicas that never got the resign's release: the lock and
    // the leader record as they were before it.
    for (const index of [0, 1]) {
      await redis.nodes[index]?.restart(); // a new server on the same port
      const { hold, record } = before[index] as (typeof before)[number];
      await admin[index]?.set(key, hold as string, 'PX', timings.leaseMs);
      await admin[index]?.hset(`${key}:leader`, record);
    }
    // Before: the two read 'a' as leader. They sit the read out, as they sit out votes.
    const read = await election.leader().catch((error: unknown) => error);
    expect(read).toBeInstanceOf(NoQuorumError);
    expect((read as NoQuorumError).message).toContain('answers as another server');
  });

  it("a new locker's first leader() waits for its connections, as a campaign does", async () => {
    const leadership = await locker().election('first-read', timings).campaign('a');
    for (let i = 0; i < 5; i++) {
      // Until its connections are up no node can say which server it is, and a read counts
      // only the nodes that did (without the wait: "fewer than 2 of 3 node(s) answered").
      const read = await locker().election('first-read', timings).leader();
      expect(read).toMatchObject({ value: 'a' });
    }
    await leadership.resign();
  });

  it('leader() and observe() refuse one server listed twice, as a campaign does', async () => {
    const { admin, redis } = fixture();
    const leadership = await locker().election('listed-twice', timings).campaign('a');
    const key = 'distlock:{listed-twice}:election';
    // Only the first server still holds the leadership: no majority of the three does.
    await Promise.all(admin.slice(1).map((a) => a.del(key, `${key}:leader`)));
    // 127.1 is 127.0.0.1: the same server as nodes[0], so "2 of 3" would be one server.
    const [first] = redis.nodes;
    const twice = [redis.urls[0], `redis://127.1:${first?.port}`, redis.urls[1]] as string[];
    const election = locker({ nodes: twice }).election('listed-twice', timings);
    // Before: the first server's view counted twice, and 'a' was read as leader.
    const read = await election.leader().catch((error: unknown) => error);
    expect(read).toBeInstanceOf(InvalidArgumentError);
    expect((read as InvalidArgumentError).field).toBe('nodes[1]');
    const observed = await election
      .observe()
      [Symbol.asyncIterator]()
      .next()
      .catch((e: unknown) => e);
    expect(observed).toBe(read); // the same refusal, not an observer that never yields
    // Before: `list()` named 'a' the leader, from the first server's view counted twice.
    const listing = async () => {
      for await (const resource of locker({ nodes: twice }).list({ match: 'listed-twice' })) {
        return resource;
      }
    };
    const listed = await listing().catch((error: unknown) => error);
    expect(listed).toBeInstanceOf(InvalidArgumentError);
    expect((listed as InvalidArgumentError).field).toBe('nodes[1]');
    await leadership.resign();
  });

  it('terms keep growing across an empty restart of the one node that keeps the counter', async () => {
    const { redis } = fixture();
    const [node] = redis.nodes;
    const nodes = redis.urls.slice(0, 1);
    const terms: bigint[] = [];
    for (const value of ['a', 'b', 'c']) {
      const leadership = await locker({ nodes }).election('restarts', timings).campaign(value);
      terms.push(leadership.term);
      await leadership.resign();
    }
    await node?.restart(); // same port, no persistence
    // No grace: this is about the counter, not about waiting out the leases the node granted.
    const next = await locker({ nodes, restartGraceMs: 0 })
      .election('restarts', timings)
      .campaign('d');
    terms.push(next.term);
    await next.resign();
    for (let i = 1; i < terms.length; i++) {
      expect(terms[i], `terms ${terms.join(', ')}`).toBeGreaterThan(terms[i - 1] as bigint);
    }
  });

  // A paused majority stops the leader's renewals. Not at the first failed renewal, but once
  // none was confirmed for renewDeadlineMs, the signal fires, and before the lease ends.
  const paused = { leaseMs: 2_000, renewDeadlineMs: 1_300, retryMs: 250 };
  const pausedTimeoutMs = 50;
  for (const nodes of [1, 3]) {
    it(`a leader whose renewals stop gives up at its renew deadline, before its lease ends (${nodes} node(s))`, async () => {
      const { redis, admin } = fixture();
      const urls = redis.urls.slice(0, nodes);
      const l = locker({ nodes: urls, nodeTimeoutMs: pausedTimeoutMs });
      const leadership = await l.election('cron', paused).campaign('me');
      let firedAt = 0;
      leadership.signal.addEventListener('abort', () => {
        firedAt = now();
      });
      await delay(paused.retryMs * 2); // a few renewals
      const majority = Math.floor(nodes / 2) + 1;
      const readAt = now();
      const ttls = await Promise.all(
        admin.slice(0, majority).map((a) => a.pttl('distlock:{cron}:election')),
      );
      for (const node of redis.nodes.slice(0, majority)) node.pause();
      const pausedAt = now();
      // The key outlives this on the paused majority: no one else can lead before it.
      const leaseEnd = readAt + Math.min(...ttls);
      await delay(leaseEnd - now() + 50);
      for (const node of redis.nodes.slice(0, majority)) node.resume();

      expect(firedAt).toBeGreaterThan(0);
      expect(firedAt).toBeLessThan(leaseEnd);
      // The last confirmed renewal began at most a retry and two round trips before the
      // pause (100 ms more for a loaded machine), so the deadline cannot come sooner.
      const drift = driftMs(paused.leaseMs, DEFAULTS.driftFactor);
      const earliest =
        pausedAt + paused.renewDeadlineMs - paused.retryMs - 2 * pausedTimeoutMs - drift - 100;
      expect(firedAt).toBeGreaterThanOrEqual(earliest);
      expect(String(leadership.signal.reason)).toContain('renewDeadlineMs');
      // After the lease, the next leader's term is larger.
      const next = await locker({ nodes: urls }).election('cron', paused).campaign('next');
      expect(next.term).toBeGreaterThan(leadership.term);
      await next.resign();
    });
  }

  it("observers see no leader once a cut-off leader's lease ends, without any message", async () => {
    const { redis, admin } = fixture();
    const port = Number(new URL(redis.urls[0] as string).port);
    const proxy = await FaultProxy.start(port);
    try {
      const timings = { leaseMs: 1_500, renewDeadlineMs: 1_000, retryMs: 250 };
      const nodeTimeoutMs = 50;
      const leader = locker({ nodes: [proxy.url], nodeTimeoutMs });
      const observer = watch(
        locker({ nodes: redis.urls.slice(0, 1), nodeTimeoutMs })
          .election('cut', timings)
          .observe(),
      );
      const leadership = await leader.election('cut', timings).campaign('cut-off');
      await observer.until((l) => l?.value === 'cut-off', timings.retryMs + 500);
      let firedAt = 0;
      leadership.signal.addEventListener('abort', () => {
        firedAt = now();
      });
      const readAt = now();
      const ttl = await (admin[0] as NonNullable<(typeof admin)[0]>).pttl(
        'distlock:{cut}:election',
      );
      proxy.set({ mode: 'blackhole' }); // nothing more reaches the node: no renewal, no release
      const cutAt = now();
      const noneAt = await observer.until(
        (l) => l === null,
        timings.leaseMs + timings.retryMs + 1_000,
        observer.seen.length,
      );
      // Not before the key expires on the node, and within retryMs and one read after.
      expect(noneAt).toBeGreaterThanOrEqual(readAt + ttl);
      expect(noneAt - cutAt).toBeLessThan(timings.leaseMs + timings.retryMs + nodeTimeoutMs + 200);
      expect(firedAt).toBeGreaterThan(0);
      expect(firedAt).toBeLessThan(noneAt);
    } finally {
      proxy.set({ mode: 'pass' });
      await proxy.close();
    }
  });

  it('one leader at a time, terms strictly increasing, under node kills and pauses (3 nodes)', async () => {
    const { redis } = fixture();
    const timings = { leaseMs: 1_000, renewDeadlineMs: 600, retryMs: 150 };
    const events: Holding[] = [];
    let lost = 0;
    let majorityPaused = false;
    let inOffice = 0;
    const stop = new AbortController();
    const candidate = async (worker: string) => {
      const l = locker({ nodes: redis.urls, nodeTimeoutMs: 50 });
      l.events.on('warning', () => {}); // the restarts are expected
      const election = l.election('h', timings);
      while (!stop.signal.aborted) {
        const leadership = await election
          .campaign(worker, { signal: stop.signal })
          .catch(() => null);
        if (!leadership) continue;
        const acquiredAt = now();
        let releasedAt = 0;
        const { signal } = leadership;
        signal.addEventListener('abort', () => {
          releasedAt ||= now();
          lost++;
        });
        // A leader in office when a majority pauses keeps going until its signal fires.
        const until = now() + 20 + Math.random() * 200;
        inOffice++;
        while (!signal.aborted && (now() < until || majorityPaused)) await delay(10);
        inOffice--;
        releasedAt ||= now();
        await leadership.resign();
        const fence = leadership.term.toString();
        events.push({ type: 'holding', worker, resource: 'h', fence, acquiredAt, releasedAt });
      }
    };
    const faults = (async () => {
      const [victim, ...majority] = redis.nodes;
      for (let round = 0; round < 2 && victim; round++) {
        await delay(400);
        await victim.kill();
        await delay(300);
        await victim.restart();
        await delay(300);
        // A paused majority outlasting the lease: the leader must give up, and the next one
        // is elected only after its lease ended. A leader is in office when it begins (on a
        // loaded machine all three may be between campaigns), and stays while it lasts.
        while (inOffice === 0) await delay(5);
        majorityPaused = true;
        for (const node of majority) node.pause();
        await delay(timings.leaseMs + 100);
        majorityPaused = false;
        for (const node of majority) node.resume();
      }
      stop.abort();
    })();
    await Promise.all([faults, candidate('w1'), candidate('w2'), candidate('w3')]);
    const report = checkHistory(events, new Map());
    expect(report.overlaps).toEqual([]);
    expect(events.length).toBeGreaterThan(3);
    expect(lost).toBeGreaterThan(0); // some leaderships ended by their signal
    const byTime = [...events].sort((x, y) => x.acquiredAt - y.acquiredAt);
    const terms = byTime.map((h) => BigInt(h.fence as string));
    for (let i = 1; i < terms.length; i++) {
      expect(terms[i] as bigint).toBeGreaterThan(terms[i - 1] as bigint);
    }
  });
});
