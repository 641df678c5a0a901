import { inspect } from 'node:util';
import { Redis as Redis6 } from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Locker, type LockerOptions, NoQuorumError } from '../../src/index.js';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';

/** Three nodes that require a password. */
let redis: RedisNodes;
const lockers: Locker[] = [];
beforeAll(async () => {
  redis = await startRedis({ nodes: 3, args: ['--requirepass', 'sekret'] });
});
afterAll(async () => {
  await Promise.all(lockers.map((l) => l.close()));
  await redis.stop();
});

/** Node URLs with the given password per node (undefined: none). */
function lockerWith(...passwords: (string | undefined)[]): Locker {
  const nodes = redis.nodes.map((node, i) => {
    const password = passwords[i];
    return password === undefined
      ? `redis://127.0.0.1:${node.port}`
      : `redis://:${password}@127.0.0.1:${node.port}`;
  });
  const locker = new Locker({ nodes });
  lockers.push(locker);
  return locker;
}

/** The error an acquisition with a 5 s wait ends with, and how long it took. */
async function failing(locker: Locker): Promise<{ error: NoQuorumError; ms: number }> {
  const started = performance.now();
  const error = await locker.acquire('r', { ttlMs: 5_000, waitMs: 5_000 }).catch((e) => e);
  expect(error).toBeInstanceOf(NoQuorumError);
  return { error, ms: performance.now() - started };
}

describe('a failure names its real cause, and a configuration error fails fast', () => {
  it('names NOAUTH when the password is missing, at once instead of after the wait', async () => {
    const { error, ms } = await failing(lockerWith(undefined, undefined, undefined));
    expect(error.message).toMatch(/NOAUTH Authentication required/);
    expect(error.message).toMatch(/the server requires a password: none was sent/);
    expect(error.message).toMatch(/configuration error/);
    expect(ms).toBeLessThan(2_500); // before: the whole 5 s wait, "not connected (reconnecting)"
  });

  it('says what NOAUTH means in the words of every client (ioredis 6 sends HELLO first)', async () => {
    const clients = redis.nodes.map((node) => new Redis6(`redis://127.0.0.1:${node.port}`));
    const locker = new Locker({ nodes: clients });
    lockers.push(locker);
    try {
      const { error, ms } = await failing(locker);
      expect(error.message).toMatch(/NOAUTH HELLO must be called/); // ioredis 6's own words
      expect(error.message).toMatch(/the server requires a password: none was sent/);
      expect(ms).toBeLessThan(2_500);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('names WRONGPASS when the password is wrong', async () => {
    const { error, ms } = await failing(lockerWith('wrong', 'wrong', 'sekret'));
    expect(error.nodes.map((n) => n.outcome)).toEqual(['error', 'error', 'yes']);
    expect(error.message).toMatch(/WRONGPASS/);
    expect(ms).toBeLessThan(2_500);
  });

  it('never shows the password, not even in the causes a logger prints', async () => {
    const { error } = await failing(lockerWith('Hunter2Password', 'Hunter2Password', 'sekret'));
    expect(error.message).toMatch(/WRONGPASS/);
    const printed = inspect(error, { depth: 20 }) + JSON.stringify(error.nodes);
    expect(printed).toMatch(/WRONGPASS/);
    expect(printed).not.toContain('Hunter2Password'); // before: in the cause's `command.args`
  });

  it('still locks when the misconfigured nodes are a minority, and says which one', async () => {
    const locker = lockerWith('sekret', 'wrong', 'sekret');
    const events: string[] = [];
    locker.events.on('acquired', ({ nodes }) =>
      events.push(
        ...nodes.map((n) => (n?.outcome === 'error' ? n.error.message : String(n?.outcome))),
      ),
    );
    const lock = await locker.acquire('r', { ttlMs: 5_000, waitMs: 1_000 });
    expect(events.find((e) => e.includes('WRONGPASS'))).toBeDefined();
    expect(await lock.release()).toBe('released');
  });
});

/** A locker on node 0 as ACL user `user` with `rules` (keys ~distlock:* always). */
async function lockerAs(
  user: string,
  rules: string,
  options: Partial<LockerOptions> = {},
): Promise<Locker> {
  const [node] = redis.nodes;
  const { Redis } = await import('ioredis');
  const admin = new Redis(`redis://:sekret@127.0.0.1:${node?.port}`);
  await admin.call(
    'ACL',
    'SETUSER',
    user,
    'reset',
    'on',
    '>pw',
    '~distlock:*',
    ...rules.split(' '),
  );
  admin.disconnect();
  const locker = new Locker({ nodes: [`redis://${user}:pw@127.0.0.1:${node?.port}`], ...options });
  lockers.push(locker);
  return locker;
}

describe('release never fails silently (ACL users)', () => {
  it('a PUBLISH the user may not send does not make a done delete look failed', async () => {
    // Redis 7 gives a new user no channels (acl-pubsub-default resetchannels).
    const locker = await lockerAs('nochannels', '+@all');
    const lock = await locker.acquire('pub', { ttlMs: 10_000 });
    expect(await lock.release()).toBe('released'); // before: 'not-held', the delete done
    const again = await locker.tryAcquire('pub', { ttlMs: 10_000 });
    expect(again).not.toBeNull();
    await again?.release();
  });

  it("says 'failed', not 'not-held', when the nodes refused the release, naming why", async () => {
    const locker = await lockerAs('noscripts', '&* +@all -evalsha -eval');
    const errors: string[] = [];
    locker.events.on('released', ({ nodes }) =>
      errors.push(...nodes.map((n) => (n.outcome === 'error' ? n.error.message : n.outcome))),
    );
    const lock = await locker.acquire('noscript', { ttlMs: 10_000 }); // a plain SET
    expect(await lock.release()).toBe('failed');
    expect(errors.join()).toMatch(/NOPERM/);
  });

  it("says 'failed' also for a lease already lost, when the nodes refused", async () => {
    const locker = await lockerAs('noscripts-lost', '&* +@all -evalsha -eval');
    const lock = await locker.acquire('lost', { ttlMs: 10_000 });
    await expect(lock.extend(10_000)).rejects.toThrow(/NOPERM/); // the lease is lost
    expect(await lock.release()).toBe('failed'); // before: 'not-held', whatever the nodes said
  });
});

/** The least each feature needs, as docs/deployments.md lists it under "ACL users". */
const ACL = {
  base:
    '+set +get +del +pttl +pexpire +eval +evalsha +publish +subscribe +spublish +ssubscribe ' +
    '+zadd +zrem +zrange +zrangebyscore +zscore +time +exists +hset +hget +hdel',
  fencing: '+incr',
  semaphores: '+zremrangebyscore +zcard +zrank',
  inspect: '+zcount',
} as const;

describe('the documented minimal ACL', () => {
  it('is enough to acquire, wait (woken over pub/sub), extend, fence, queue and release', async () => {
    const all = `${ACL.base} ${ACL.fencing}`;
    const [holder, waiter] = [
      await lockerAs('acl-a', `&distlock:* ${all}`),
      // Polling would take 2.5 to 7.5 s: only a pub/sub wake-up comes in time.
      await lockerAs('acl-b', `&distlock:* ${all}`, { retryDelayMs: 5_000 }),
    ];
    for (const options of [{}, { fencing: true }, { fair: true }, { fair: true, fencing: true }]) {
      const lock = await holder.acquire('acl', { ttlMs: 10_000, ...options });
      await lock.extend(10_000);
      const waiting = waiter.acquire('acl', { ttlMs: 10_000, waitMs: 5_000, ...options });
      await new Promise((resolve) => setTimeout(resolve, 150));
      const releasedAt = performance.now();
      expect(await lock.release()).toBe('released');
      const next = await waiting;
      expect(performance.now() - releasedAt).toBeLessThan(90); // woken, not polling
      expect(await next.release()).toBe('released');
    }
  });

  it('is enough for semaphores and read-write locks: take, wait (woken), extend, give back', async () => {
    const all = `${ACL.base} ${ACL.semaphores}`;
    const [holder, waiter] = [
      await lockerAs('acl-s', `&distlock:* ${all}`),
      await lockerAs('acl-t', `&distlock:* ${all}`, { retryDelayMs: 5_000 }),
    ];
    for (const fair of [false, true]) {
      const permit = await holder.semaphore('acl-pool', { permits: 1 }).acquire({ ttlMs: 10_000 });
      await permit.extend(10_000);
      const pool = waiter.semaphore('acl-pool', { permits: 1 });
      const waiting = pool.acquire({ ttlMs: 10_000, waitMs: 5_000, fair });
      await new Promise((resolve) => setTimeout(resolve, 150));
      const releasedAt = performance.now();
      expect(await permit.release()).toBe('released');
      const next = await waiting;
      expect(performance.now() - releasedAt).toBeLessThan(90); // woken, not polling
      expect(await next.release()).toBe('released');
    }
    const doc = holder.readWriteLock('acl-doc');
    const reader = await doc.read.acquire({ ttlMs: 10_000 });
    await reader.extend(10_000);
    const writing = waiter.readWriteLock('acl-doc').write.acquire({ ttlMs: 10_000, waitMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const readerGoneAt = performance.now();
    expect(await reader.release()).toBe('released');
    const writer = await writing;
    expect(performance.now() - readerGoneAt).toBeLessThan(90); // woken, not polling
    expect(await writer.release()).toBe('released');
    const without = await lockerAs('acl-u', `&distlock:* ${ACL.base}`);
    const error = await without
      .semaphore('acl-pool', { permits: 1 })
      .acquire({ ttlMs: 10_000 })
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/ZREMRANGEBYSCORE: grant \+zremrangebyscore/);
  });

  it('is enough, with +zcount, to inspect a lock, and as it is to break one', async () => {
    const holder = await lockerAs('acl-h', `&distlock:* ${ACL.base}`);
    const lock = await holder.acquire('acl-break', { ttlMs: 10_000 });
    const operator = await lockerAs('acl-o', `&distlock:* ${ACL.base} ${ACL.inspect}`);
    expect(await operator.inspect('acl-break')).toMatchObject({ state: 'held', heldOn: 1 });
    const [unread] = (await holder.inspect('acl-break')).nodes; // no +zcount
    expect(unread?.error?.message).toMatch(/ZCOUNT: grant \+zcount/);
    expect(await holder.forceRelease('acl-break')).toMatchObject({ result: 'released' });
    expect(await lock.release()).toBe('not-held');
  });

  it('names the command that is missing', async () => {
    const locker = await lockerAs('acl-c', `&distlock:* ${ACL.base.replace('+pexpire ', '')}`);
    const lock = await locker.acquire('acl', { ttlMs: 10_000 });
    const error = await lock.extend(10_000).catch((e: unknown) => e);
    // Redis says only "can't run this command ... on @user_script:6"; distlock names it.
    expect((error as Error).message).toMatch(/can't run this command.*PEXPIRE: grant \+pexpire/);
  });

  it('fails at once, as a configuration error, when a script may not run a command', async () => {
    const locker = await lockerAs('acl-d', `&distlock:* ${ACL.base}`); // no +incr for fencing
    const started = performance.now();
    const error = await locker
      .acquire('acl', { ttlMs: 10_000, waitMs: 3_000, fencing: true })
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(500); // before: the whole 3 s
    expect((error as Error).message).toMatch(/A configuration error.*INCR: grant \+incr/s);
  });
});
