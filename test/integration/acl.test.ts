import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  fencedPeek,
  fencedReadForUpdate,
  fencedWrite,
  Locker,
  type LockerOptions,
  LockLostError,
  NoQuorumError,
} from '../../src/index.js';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';
import { distlock } from '../support/cli.js';

/**
 * ACL users: each row of the table under "ACL users" in docs/deployments.md, read from the
 * page, run as a user with exactly that row's rules; and each permission taken away names
 * itself, without making a done or still-held lock look lost.
 */
let redis: RedisNodes;
let admin: Redis;
const lockers: Locker[] = [];
const clients: Redis[] = [];
beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.urls[0] as string);
});
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((l) => l.close()));
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
});

const page = readFileSync(new URL('../../docs/deployments.md', import.meta.url), 'utf8');

/**
 * The code spans of the commands cell of the row of the "ACL users" table whose feature cell
 * matches `feature`, each split into its rules.
 */
function documented(feature: RegExp): string[][] {
  const row = page.split('\n').find((line) => {
    const [, first] = line.split('|');
    return first !== undefined && feature.test(first);
  });
  const cell = row?.split('|')[2] ?? '';
  const spans = [...cell.matchAll(/`([^`]+)`/g)].map((match) => (match[1] ?? '').split(' '));
  expect(spans.length, `the row of ${feature}`).toBeGreaterThan(0);
  return spans;
}

const LOCKS = documented(/^ locks \(acquire/)[0] as string[];

/** Creates (or resets) ACL user `user` with `rules`; resolves its URL. */
async function userWith(user: string, rules: readonly string[]): Promise<string> {
  await admin.call('ACL', 'SETUSER', user, 'reset', 'on', '>pw', ...rules);
  return `redis://${user}:pw@127.0.0.1:${redis.nodes[0]?.port}`;
}

/** A locker as `user`, whose keys and channels are distlock's, with `rules`. */
async function lockerAs(
  user: string,
  rules: readonly string[],
  options: Partial<LockerOptions> = {},
): Promise<Locker> {
  const url = await userWith(user, ['~distlock:*', '&distlock:*', ...rules]);
  const locker = new Locker({ nodes: [url], ...options });
  lockers.push(locker);
  return locker;
}

/** `rules` without `rule`, which must be among them. */
function without(rules: readonly string[], rule: string): string[] {
  expect(rules).toContain(rule);
  return rules.filter((r) => r !== rule);
}

const FENCING = documented(/^ `fencing: true`/)[0] as string[];
const SEMAPHORES = documented(/^ semaphores, read-write locks/)[0] as string[];
const [INSPECT = [], READ_ONLY = []] = documented(/^ `inspect`/);

/**
 * A waiter's retry delay far above a hand-off: a waiter that polls pauses at least half of it
 * (see `retryDelay`), so one that acquires sooner after a release was woken by it.
 */
const POLLING_MS = 5_000;

/** Sleeps `ms`. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the documented rules of each feature, run as a user with exactly them', () => {
  it('locks: acquire, wait (woken over pub/sub), extend, fence, queue and release', async () => {
    const all = [...LOCKS, ...FENCING];
    const [holder, waiter] = [
      await lockerAs('acl-a', all),
      await lockerAs('acl-b', all, { retryDelayMs: POLLING_MS }),
    ];
    for (const options of [{}, { fencing: true }, { fair: true }, { fair: true, fencing: true }]) {
      const lock = await holder.acquire('acl', { ttlMs: 10_000, ...options });
      await lock.extend(10_000);
      const waiting = waiter.acquire('acl', { ttlMs: 10_000, waitMs: 5_000, ...options });
      await sleep(150);
      const releasedAt = performance.now();
      expect(await lock.release()).toBe('released');
      const next = await waiting;
      expect(performance.now() - releasedAt).toBeLessThan(POLLING_MS / 2); // woken, not polling
      expect(await next.release()).toBe('released');
    }
  });

  it('semaphores and read-write locks: take, wait (woken), extend, give back', async () => {
    const all = [...LOCKS, ...SEMAPHORES];
    const [holder, waiter] = [
      await lockerAs('acl-s', all),
      await lockerAs('acl-t', all, { retryDelayMs: POLLING_MS }),
    ];
    for (const fair of [false, true]) {
      const permit = await holder.semaphore('acl-pool', { permits: 1 }).acquire({ ttlMs: 10_000 });
      await permit.extend(10_000);
      const pool = waiter.semaphore('acl-pool', { permits: 1 });
      const waiting = pool.acquire({ ttlMs: 10_000, waitMs: 5_000, fair });
      await sleep(150);
      const releasedAt = performance.now();
      expect(await permit.release()).toBe('released');
      const next = await waiting;
      expect(performance.now() - releasedAt).toBeLessThan(POLLING_MS / 2); // woken, not polling
      expect(await next.release()).toBe('released');
    }
    const doc = holder.readWriteLock('acl-doc');
    const reader = await doc.read.acquire({ ttlMs: 10_000 });
    await reader.extend(10_000);
    const writing = waiter.readWriteLock('acl-doc').write.acquire({ ttlMs: 10_000, waitMs: 5_000 });
    await sleep(150);
    const readerGoneAt = performance.now();
    expect(await reader.release()).toBe('released');
    const writer = await writing;
    expect(performance.now() - readerGoneAt).toBeLessThan(POLLING_MS / 2); // woken, not polling
    expect(await writer.release()).toBe('released');
    const locksOnly = await lockerAs('acl-u', LOCKS);
    const error = await locksOnly
      .semaphore('acl-pool', { permits: 1 })
      .acquire({ ttlMs: 10_000 })
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/ZREMRANGEBYSCORE: grant \+zremrangebyscore/);
  });

  it('inspect (with +zcount, or as a user that only reads), and breaking a lock', async () => {
    const holder = await lockerAs('acl-h', LOCKS);
    const lock = await holder.acquire('acl-break', { ttlMs: 10_000 });
    const operator = await lockerAs('acl-o', [...LOCKS, ...INSPECT]);
    expect(await operator.inspect('acl-break')).toMatchObject({ state: 'held', heldOn: 1 });
    const reader = await lockerAs('acl-reader', READ_ONLY);
    expect(await reader.inspect('acl-break')).toMatchObject({ state: 'held', heldOn: 1 });
    const [unread] = (await holder.inspect('acl-break')).nodes; // no +zcount
    expect(unread?.error?.message).toMatch(/ZCOUNT: grant \+zcount/);
    expect(await holder.forceRelease('acl-break')).toMatchObject({ result: 'released' });
    expect(await lock.release()).toBe('not-held');
  });

  it('lists (with the documented rules, or as a user that only reads), and says NOPERM without +scan', async () => {
    const [LIST = [], LIST_READ_ONLY = []] = documented(/^ `locker\.list`/);
    const holder = await lockerAs('acl-lh', [...LOCKS, ...SEMAPHORES], { owner: 'acl-holder' });
    const lock = await holder.acquire('acl-list', { ttlMs: 10_000 });
    const permit = await holder
      .semaphore('acl-list-pool', { permits: 2 })
      .acquire({ ttlMs: 10_000 });
    const names = async (locker: Locker) => {
      const found = [];
      for await (const r of locker.list({ match: 'acl-list*' }))
        found.push([r.kind, r.name, r.owners]);
      return found;
    };
    const expected = [
      ['lock', 'acl-list', ['acl-holder']],
      ['semaphore', 'acl-list-pool', ['acl-holder']],
    ];
    expect(await names(await lockerAs('acl-lo', [...LOCKS, ...LIST]))).toEqual(expected);
    expect(await names(await lockerAs('acl-lr', LIST_READ_ONLY))).toEqual(expected);
    // The command as that user: it reads which server each node is without +info, and says
    // nothing of the eviction check, which is about locking there.
    const readOnly = await userWith('acl-lr', ['~distlock:*', '&distlock:*', ...LIST_READ_ONLY]);
    const shown = await distlock(['ls', 'acl-list*', '--redis', readOnly]).done;
    expect(shown.stdout).toMatch(/^lock acl-list +held by acl-holder/m);
    // ioredis says it skips its ready check (without +info, as documented); distlock nothing.
    expect(shown.stderr).not.toMatch(/DistlockWarning|EVICTION/);
    const error = await names(holder).catch((e: unknown) => e);
    expect(String(error)).toMatch(/NOPERM.*scan/i);
    await lock.release();
    await permit.release();
  });

  it('fencedWrite, fencedReadForUpdate and fencedPeek, as a user of the data keys only', async () => {
    const [rules = []] = documented(/fencedWrite/);
    const url = await userWith('data-only', ['~data:*', ...rules]);
    const client = new Redis(url);
    clients.push(client);
    // Before: `+hget +hset +hmget` only, and the scripts' EVAL got NOPERM.
    expect(await fencedWrite(client, 'data:acl', 5n, 'v1')).toBe('applied');
    expect(await fencedReadForUpdate(client, 'data:acl', 6n)).toEqual({ value: 'v1' });
    expect(await fencedWrite(client, 'data:acl', 5n, 'old')).toBe('stale');
    expect(await fencedPeek(client, 'data:acl')).toEqual({ value: 'v1', fence: 6n });
  });

  it('runs an election with the documented rules: campaign, leader, resign', async () => {
    const rules = [...LOCKS, ...(documented(/^ elections/)[0] as string[])];
    const election = (await lockerAs('acl-e', rules)).election('acl-election');
    const leadership = await election.campaign('me');
    expect((await election.leader())?.value).toBe('me');
    expect(await leadership.resign()).toBe('released');
    expect(await election.leader()).toBeNull();
  });

  it('reads the leader on three nodes as a user that only reads, and writes nothing', async () => {
    const [, READ_LEADER = []] = documented(/^ elections/);
    const three = await startRedis({ nodes: 3 });
    const admins = three.urls.map((url) => new Redis(url));
    clients.push(...admins);
    try {
      const campaigner = new Locker({ nodes: three.urls });
      lockers.push(campaigner);
      const leadership = await campaigner.election('acl-read').campaign('me');
      const readerWith = async (rules: readonly string[]) => {
        for (const client of admins) {
          const all = ['~distlock:*', '&distlock:*', ...rules];
          await client.call('ACL', 'SETUSER', 'leader-reader', 'reset', 'on', '>pw', ...all);
          await client.call('ACL', 'LOG', 'RESET');
        }
        const urls = three.nodes.map((node) => `redis://leader-reader:pw@127.0.0.1:${node.port}`);
        const reader = new Locker({ nodes: urls });
        lockers.push(reader);
        return reader.election('acl-read');
      };
      expect(await (await readerWith(READ_LEADER)).leader()).toMatchObject({ value: 'me' });
      // +info from its own row: with it, the nodes say which server they are, and (before)
      // the first read recorded its lease on each: a SET that this user may not send.
      const election = await readerWith([...READ_LEADER, '+info']);
      expect(await election.leader()).toMatchObject({ value: 'me' });
      const observer = election.observe()[Symbol.asyncIterator]();
      expect((await observer.next()).value).toMatchObject({ value: 'me' });
      await observer.return?.();
      for (const client of admins)
        expect(deniedCommands(await client.call('ACL', 'LOG'))).toEqual([]);
      expect(await leadership.resign()).toBe('released');
      expect(await election.leader()).toBeNull();
    } finally {
      await Promise.all(lockers.splice(0).map((l) => l.close()));
      await three.stop();
    }
  });

  it('fails at once, as a configuration error, when a script may not run a command', async () => {
    const locker = await lockerAs('acl-d', LOCKS); // no +incr for fencing
    const started = performance.now();
    const waitMs = 3_000;
    const error = await locker
      .acquire('acl-fenced', { ttlMs: 10_000, waitMs, fencing: true })
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(waitMs / 2); // not retried for the wait
    expect((error as Error).message).toMatch(/A configuration error.*INCR: grant \+incr/s);
  });
});

/**
 * The commands an `ACL LOG` reply says were denied, but for the client library's own
 * `CLIENT SETINFO` at connect (ioredis sends it; Valkey 8 logs its denial, Redis 7.0 lacks it).
 */
function deniedCommands(log: unknown): string[] {
  const entries = log as (string | number)[][];
  return entries
    .map((entry) => String(entry[entry.indexOf('object') + 1]))
    .filter((command) => command !== 'client|setinfo');
}

/** Waits for `lock`'s release to hand `resource` to `waiter`; resolves the hand-off's ms. */
async function handOffMs(holder: Locker, waiter: Locker, resource: string): Promise<number> {
  const lock = await holder.acquire(resource, { ttlMs: 10_000 });
  const waiting = waiter.acquire(resource, { ttlMs: 10_000, waitMs: 5_000 });
  await new Promise((resolve) => setTimeout(resolve, 150)); // the waiter is in line
  const releasedAt = performance.now();
  expect(await lock.release()).toBe('released');
  const next = await waiting;
  const ms = performance.now() - releasedAt;
  expect(await next.release()).toBe('released');
  return ms;
}

/** The `PUBSUB_UNAVAILABLE` warnings of `locker`, as `code: message`. */
function warningsOf(locker: Locker): string[] {
  const warnings: string[] = [];
  locker.events.on('warning', ({ code, message }) => {
    if (code === 'PUBSUB_UNAVAILABLE') warnings.push(`${code}: ${message}`);
  });
  return warnings;
}

describe('pub/sub refused: one warning naming the rule to add, and waiters poll', () => {
  it('names +subscribe for a waiter that may not subscribe', async () => {
    const holder = await lockerAs('acl-pub', LOCKS);
    const waiter = await lockerAs('acl-nosub', without(LOCKS, '+subscribe'), {
      retryDelayMs: 200,
    });
    const warnings = warningsOf(waiter);
    const polled = await handOffMs(holder, waiter, 'acl-nosub');
    expect(polled).toBeLessThan(5_000); // handed over by polling, within the wait
    await handOffMs(holder, waiter, 'acl-nosub');
    // Before: no warning at all.
    expect(warnings).toEqual([
      expect.stringMatching(/^PUBSUB_UNAVAILABLE: .*refused SUBSCRIBE .*NOPERM.*grant \+subscribe/),
    ]);
    const woken = await lockerAs('acl-sub', LOCKS, { retryDelayMs: POLLING_MS });
    expect(await handOffMs(holder, woken, 'acl-nosub')).toBeLessThan(POLLING_MS / 2);
  });

  it('names +publish for a holder that may not publish', async () => {
    const holder = await lockerAs('acl-nopub', without(LOCKS, '+publish'));
    const waiter = await lockerAs('acl-sub2', LOCKS, { retryDelayMs: 200 });
    const warnings = warningsOf(holder);
    expect(await handOffMs(holder, waiter, 'acl-nopub')).toBeLessThan(5_000); // by polling
    await handOffMs(holder, waiter, 'acl-nopub');
    expect(warnings).toEqual([
      expect.stringMatching(/^PUBSUB_UNAVAILABLE: .*refused PUBLISH .*NOPERM.*grant \+publish/),
    ]);
  });

  it('names the channels for a user without them', async () => {
    const url = await userWith('acl-nochan', ['~distlock:*', ...LOCKS]); // no &distlock:*
    const waiter = new Locker({ nodes: [url], retryDelayMs: 200 });
    lockers.push(waiter);
    const warnings = warningsOf(waiter);
    const holder = await lockerAs('acl-pub3', LOCKS);
    await handOffMs(holder, waiter, 'acl-nochan');
    await handOffMs(holder, waiter, 'acl-nochan');
    // The waiter also released what it was handed: the same rule serves both commands.
    expect(warnings.sort()).toEqual([
      expect.stringMatching(/^PUBSUB_UNAVAILABLE: .*refused PUBLISH .*NOPERM.*grant &distlock:\*$/),
      expect.stringMatching(
        /^PUBSUB_UNAVAILABLE: .*refused SUBSCRIBE .*NOPERM.*grant &distlock:\*$/,
      ),
    ]);
  });
});

describe('a permission missing for release or extend is named, and no lock looks lost', () => {
  it('release() rejects naming the command, rather than resolving an ordinary failure', async () => {
    const locker = await lockerAs('acl-nodel', without(LOCKS, '+del'));
    const released: string[] = [];
    locker.events.on('released', ({ result }) => released.push(result));
    const lock = await locker.acquire('acl-nodel', { ttlMs: 10_000 });
    const error = await lock.release().catch((e: unknown) => e);
    // Before: resolved 'failed', and only the `released` event said why.
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as NoQuorumError).message).toMatch(/configuration error/);
    expect((error as NoQuorumError).message).toMatch(/DEL: grant \+del/);
    expect(released).toEqual(['failed']);
  });

  it("withLock: the work's own error wins over a refused release, which rejects otherwise", async () => {
    const locker = await lockerAs('acl-nodel-with', without(LOCKS, '+del'));
    const work = async () => {
      throw new Error('the work failed');
    };
    await expect(locker.withLock('acl-with', { ttlMs: 10_000 }, work)).rejects.toThrow(
      'the work failed',
    );
    await expect(locker.withLock('acl-with-2', { ttlMs: 10_000 }, () => 1)).rejects.toThrow(
      /configuration error.*DEL: grant \+del/s,
    );
  });

  it('release() rejects naming NOPERM for a user without scripts, also for a lease that ran out', async () => {
    const locker = await lockerAs('acl-noscripts', ['+@all', '-evalsha', '-eval']);
    const lock = await locker.acquire('acl-noscript', { ttlMs: 10_000 }); // a plain SET
    await expect(lock.release()).rejects.toThrow(/NOPERM .*'eval' command/);
    const ttlMs = 100;
    const expired = await locker.acquire('acl-noscript-lost', { ttlMs });
    await sleep(ttlMs);
    expect(expired.remainingMs()).toBe(0);
    // The nodes refused: nothing says whether the key is gone (before: resolved 'failed').
    await expect(expired.release()).rejects.toThrow(/configuration error.*NOPERM/s);
  });

  it('a PUBLISH the user may not send does not make a done delete look failed', async () => {
    // Redis 7 gives a new user no channels (acl-pubsub-default resetchannels).
    const url = await userWith('acl-nochannels', ['~distlock:*', '+@all']);
    const locker = new Locker({ nodes: [url] });
    lockers.push(locker);
    warningsOf(locker); // heard, not printed
    const lock = await locker.acquire('acl-pub', { ttlMs: 10_000 });
    expect(await lock.release()).toBe('released'); // before: 'not-held', the delete done
    const again = await locker.tryAcquire('acl-pub', { ttlMs: 10_000 });
    expect(again).not.toBeNull();
    await again?.release();
  });

  it('extend() rejects naming the command, and the lock stays held until its deadline', async () => {
    const locker = await lockerAs('acl-nopexpire', without(LOCKS, '+pexpire'));
    const lost: string[] = [];
    locker.events.on('lost', ({ resource }) => lost.push(resource));
    const lock = await locker.acquire('acl-nopexpire', { ttlMs: 10_000 });
    const error = await lock.extend(10_000).catch((e: unknown) => e);
    // Before: LOCK_LOST, the signal fired, and the key was deleted.
    expect(error).toBeInstanceOf(NoQuorumError);
    // Redis says only "can't run this command ... on @user_script:6"; distlock names it.
    // (Valkey names it: "no permissions to run the 'pexpire' command"; the hint follows too.)
    expect((error as NoQuorumError).message).toMatch(
      /(can't run this command|to run the 'pexpire' command).*PEXPIRE: grant \+pexpire/,
    );
    expect((error as NoQuorumError).message).toMatch(/still held/);
    expect(lock.signal.aborted).toBe(false);
    expect(lock.remainingMs()).toBeGreaterThan(0);
    expect(lost).toEqual([]);
    const other = await lockerAs('acl-other', LOCKS);
    expect(await other.tryAcquire('acl-nopexpire', { ttlMs: 10_000 })).toBeNull();
    expect(await lock.release()).toBe('released');
    expect(await other.tryAcquire('acl-nopexpire', { ttlMs: 10_000 })).not.toBeNull();
  });

  it('an auto-extended lock that cannot be extended is lost at its deadline, naming why', async () => {
    const nodeTimeoutMs = 500;
    const locker = await lockerAs('acl-nopexpire-auto', without(LOCKS, '+pexpire'), {
      nodeTimeoutMs,
    });
    const ttlMs = 2_000;
    const lock = await locker.acquire('acl-auto', { ttlMs, autoExtend: true });
    const deadline = performance.now() + lock.remainingMs();
    // The watchdog extends at half the validity; by then + the node timeout it was refused.
    await sleep(ttlMs / 2 + nodeTimeoutMs);
    expect(lock.signal.aborted).toBe(false); // before: lost as soon as it was refused
    const reason = await new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)),
    );
    expect(performance.now()).toBeGreaterThanOrEqual(deadline - 1);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).message).toMatch(
      /validity ran out .*the last extension failed: .*PEXPIRE: grant \+pexpire/,
    );
    expect(await lock.release()).toBe('not-held');
  });
});
