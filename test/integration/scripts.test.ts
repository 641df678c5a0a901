import { setTimeout as delay } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { IORedisConnection } from '../../src/driver/ioredis.js';
import { proclaimScript } from '../../src/kinds/election/lua/proclaim.js';
import { acquireFencedScript } from '../../src/kinds/mutex/lua/acquire-fenced.js';
import { acquireInLineScript } from '../../src/kinds/mutex/lua/acquire-in-line.js';
import { leaveQueueScript } from '../../src/kinds/mutex/lua/leave-queue.js';
import { releaseScript } from '../../src/kinds/mutex/lua/release.js';
import { BARGE_WINDOW_MS } from '../../src/lua/waiting-line.js';
import { useClockedRedis, useRedis } from '../support/redis.js';

const fixture = useRedis(1);
const clocked = useClockedRedis();

describe('acquisition scripts, when an earlier attempt with the same token already landed', () => {
  it("acquire-fenced makes it the new attempt's hold, with the TTL that attempt counts on", async () => {
    const admin = fixture().admin[0] as Redis;
    await admin.set('k', 'tok:1', 'PX', 300);
    await delay(200);
    const node = IORedisConnection.of(admin);
    const reply = await acquireFencedScript.run(
      node,
      { key: 'k', token: 'tok', attempt: 2, ttlMs: 10_000 },
      1_000,
    );
    expect(reply.state).toBe(0);
    expect(await admin.get('k')).toBe('tok:2');
    expect(await admin.pttl('k')).toBeGreaterThan(9_000);
  });

  it("acquire-in-line makes it the new attempt's hold, renews the TTL and leaves the line", async () => {
    const admin = fixture().admin[0] as Redis;
    await admin.set('k', 'tok:1', 'PX', 300);
    await delay(200);
    const node = IORedisConnection.of(admin);
    // KEYS: k, k:queue, k:queue-deadlines, k:fence; channel k:released.
    const acquisition = { key: 'k', token: 'tok', attempt: 2, ttlMs: 10_000, fencing: false };
    const line = { ticket: 1, waiterTimeoutMs: 1_000, fair: true, wakeChannel: 'PUBLISH w' };
    const reply = await acquireInLineScript.run(node, { ...acquisition, line }, 1_000);
    expect(reply.state).toBe(0);
    expect(await admin.get('k')).toBe('tok:2');
    expect(await admin.pttl('k')).toBeGreaterThan(9_000);
    expect(await admin.zcard('k:queue')).toBe(0);
    expect(await admin.zcard('k:queue-deadlines')).toBe(0);
  });
});

describe('requests of an earlier attempt that arrive after a later one', () => {
  it("an undo leaves the later attempt's hold alone", async () => {
    const admin = fixture().admin[0] as Redis;
    const node = IORedisConnection.of(admin);
    await admin.set('k', 'tok:2', 'PX', 10_000);
    const undo = { key: 'k', token: 'tok', attempt: 1, announce: false };
    expect(await releaseScript.run(node, undo, 1_000)).toBe(0);
    expect(await admin.get('k')).toBe('tok:2');
    expect(await releaseScript.run(node, { ...undo, attempt: 2 }, 1_000)).toBe(1);
    expect(await admin.exists('k')).toBe(0);
  });

  it('a take changes nothing, and says a later attempt holds it', async () => {
    const admin = fixture().admin[0] as Redis;
    const node = IORedisConnection.of(admin);
    await admin.set('k', 'tok:2', 'PX', 10_000);
    const late = { key: 'k', token: 'tok', attempt: 1, ttlMs: 500 };
    expect((await acquireFencedScript.run(node, late, 1_000)).state).toBe(-3);
    const line = { ticket: 1, waiterTimeoutMs: 1_000, fair: false, wakeChannel: 'PUBLISH w' };
    const inLine = { ...late, fencing: false, line };
    expect((await acquireInLineScript.run(node, inLine, 1_000)).state).toBe(-3);
    expect(await admin.get('k')).toBe('tok:2');
    expect(await admin.pttl('k')).toBeGreaterThan(9_000);
    expect(await admin.exists('k:queue')).toBe(0);
  });
});

/**
 * An acquire-in-line request for the lock at 'k', by `token` at `ticket` in line: fair unless
 * `fair` is false (a release always hands the lock over to a fair waiter).
 */
function inLine(
  token: string,
  ticket: number,
  { fair = true, attempt = 1, countsHandOver = false } = {},
) {
  return {
    key: 'k',
    token,
    attempt,
    ttlMs: 10_000,
    fencing: false,
    countsHandOver,
    line: { ticket, waiterTimeoutMs: 1_000, fair, wakeChannel: 'PUBLISH w' },
  };
}

describe('the waiting line', () => {
  const request = (token: string, ticket: number) => inLine(token, ticket);
  /** The holder's release (`announce`), or an undo of its attempt. */
  const holder = (announce: boolean) => ({ key: 'k', token: 'holder', attempt: 1, announce });

  it('release hands the lock to the first waiter, for no longer than its deadline', async () => {
    const admin = fixture().admin[0] as Redis;
    const node = IORedisConnection.of(admin);
    await admin.set('k', 'holder:1', 'PX', 10_000);
    for (const [token, ticket] of [
      ['second', 2],
      ['first', 1],
    ] as const) {
      expect(
        (await acquireInLineScript.run(node, request(token, ticket), 1_000)).state,
      ).toBeGreaterThan(0);
    }
    expect(await releaseScript.run(node, holder(true), 1_000)).toBe(1);
    expect(await admin.get('k')).toBe('first'); // a hand-over: the bare token
    expect(await admin.pttl('k')).toBeLessThanOrEqual(1_000); // the waiter's deadline
    expect(await admin.zrange('k:queue', 0, -1)).toEqual(['second']);
    // The waiter's next attempt confirms it, renewing the key to its own TTL.
    expect((await acquireInLineScript.run(node, request('first', 1), 1_000)).state).toBe(0);
    expect(await admin.get('k')).toBe('first:1');
    expect(await admin.pttl('k')).toBeGreaterThan(9_000);
    await admin.flushall();
  });

  it('a waiter that leaves after the lock was handed to it passes it on', async () => {
    const admin = fixture().admin[0] as Redis;
    const node = IORedisConnection.of(admin);
    await admin.set('k', 'holder:1', 'PX', 10_000);
    await acquireInLineScript.run(node, request('first', 1), 1_000);
    await acquireInLineScript.run(node, request('second', 2), 1_000);
    await releaseScript.run(node, holder(true), 1_000);
    expect(
      await leaveQueueScript.run(node, { key: 'k', token: 'first', granted: false }, 1_000),
    ).toBe(1);
    expect(await admin.get('k')).toBe('second');
    expect(
      await leaveQueueScript.run(node, { key: 'k', token: 'second', granted: false }, 1_000),
    ).toBe(1);
    expect(await admin.keys('*')).toEqual([]); // nobody left: deleted, line gone
  });

  it('hands a waiter that counts from the message the lock for its TTL, naming its last attempt', async () => {
    const admin = fixture().admin[0] as Redis;
    const node = IORedisConnection.of(admin);
    const listener = admin.duplicate();
    const woken: string[] = [];
    listener.on('message', (_channel: string, message: string) => woken.push(message));
    await listener.subscribe('w');
    await admin.set('k', 'holder:1', 'PX', 10_000);
    for (const attempt of [1, 2]) {
      const counting = inLine('first', 1, { attempt, countsHandOver: true });
      expect((await acquireInLineScript.run(node, counting, 1_000)).state).toBeGreaterThan(0);
    }
    expect(await releaseScript.run(node, holder(true), 1_000)).toBe(1);
    // The hold of the attempt it counts from: a late request of an earlier one cannot touch it.
    expect(await admin.get('k')).toBe('first:2');
    // Its TTL, not its deadline in line (1 s): it may hold from the message.
    expect(await admin.pttl('k')).toBeGreaterThan(9_000);
    // Before: a late take of attempt 1 made the bare token its hold, and its undo deleted it.
    const late = inLine('first', 1, { attempt: 1, countsHandOver: true });
    expect((await acquireInLineScript.run(node, late, 1_000)).state).toBe(-3);
    const lateUndo = { key: 'k', token: 'first', attempt: 1, announce: false };
    expect(await releaseScript.run(node, lateUndo, 1_000)).toBe(0);
    expect(await admin.get('k')).toBe('first:2');
    while (woken.length === 0) await delay(5);
    expect(woken).toEqual(['1 2']); // its ticket, and the attempt whose send time it counts from
    expect(await admin.hgetall('k:queue-wake')).toEqual({}); // left the line, the count too
    // The holder's release ends the hand-over, nobody else waiting: a plain delete.
    const release = { key: 'k', token: 'first', attempt: 2, announce: true };
    expect(await admin.exists('k:queue-turn')).toBe(0); // the line is empty: no turn left
    expect(await releaseScript.run(node, release, 1_000)).toBe(1);
    expect(await admin.keys('*')).toEqual([]);
    listener.disconnect();
  });

  it('an undo deletes silently: it hands nothing over', async () => {
    const admin = fixture().admin[0] as Redis;
    const node = IORedisConnection.of(admin);
    await admin.set('k', 'holder:1', 'PX', 10_000);
    await acquireInLineScript.run(node, request('first', 1), 1_000);
    await releaseScript.run(node, holder(false), 1_000);
    expect(await admin.exists('k')).toBe(0);
    expect(await admin.zrange('k:queue', 0, -1)).toEqual(['first']);
    await admin.flushall();
  });
});

// On a server whose clock stands still: a turn started "now" stays young, however slow this
// machine is, and one started 10 ms before is over.
describe('bounded barging: a release may leave the lock free while no fair waiter is in line', () => {
  const plain = (token: string, ticket: number, attempt = 1) =>
    inLine(token, ticket, { fair: false, attempt });
  const release = { key: 'k', token: 'holder', attempt: 1, announce: true };

  /** Sets when the lock last went to the front: `ageMs` before the server's now. */
  async function turnStarted(admin: Redis, ageMs: number): Promise<number> {
    const [seconds, micros] = await admin.time();
    const now = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
    await admin.hset('k:queue-turn', 'since', now - ageMs);
    return now;
  }

  async function heldWithTwoWaiting(admin: Redis, node: IORedisConnection, secondFair = false) {
    await admin.set('k', 'holder:1', 'PX', 10_000);
    expect((await acquireInLineScript.run(node, plain('first', 1), 1_000)).state).toBeGreaterThan(
      0,
    );
    const second = inLine('second', 2, { fair: secondFair });
    expect((await acquireInLineScript.run(node, second, 1_000)).state).toBeGreaterThan(0);
  }

  /**
   * A client subscribed to `channel`. `heard(expected)` waits for as many messages as it
   * names, expects exactly those, and closes the client.
   */
  async function wakeUpsOn(admin: Redis, channel: string) {
    const listener = admin.duplicate();
    const woken: string[] = [];
    listener.on('message', (_channel: string, ticket: string) => woken.push(ticket));
    await listener.subscribe(channel);
    return {
      async heard(expected: string[]) {
        while (woken.length < expected.length) await delay(5);
        expect(woken).toEqual(expected);
        listener.disconnect();
      },
    };
  }

  it('within the window: deletes the key, wakes the first waiter, and the releaser may take it back', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    const wakeUps = await wakeUpsOn(admin, 'w');
    await heldWithTwoWaiting(admin, node);
    await turnStarted(admin, 0);
    await releasedFree(admin, node); // free, not handed over
    expect(await admin.zrange('k:queue', 0, -1)).toEqual(['first', 'second']);
    // Before: the release handed the lock to 'first', and this take joined the line.
    expect((await acquireInLineScript.run(node, plain('holder', 3, 2), 1_000)).state).toBe(0);
    expect(await admin.get('k')).toBe('holder:2');
    await wakeUps.heard(['1']); // the first waiter's ticket, and only it
    await admin.flushall();
  });

  it('names no attempt for a waiter that does not count from the message: it confirms', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    const wakeUps = await wakeUpsOn(admin, 'w');
    await heldWithTwoWaiting(admin, node);
    await turnStarted(admin, BARGE_WINDOW_MS);
    await releasedToFirst(admin, node);
    expect(await admin.pttl('k')).toBeLessThanOrEqual(1_000); // until its deadline in line
    await wakeUps.heard(['1']);
    await admin.flushall();
  });

  it('wakes a waiter whose entry has the form of earlier versions, `<ticket> <channel>`', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    const wakeUps = await wakeUpsOn(admin, 'w');
    await heldWithTwoWaiting(admin, node);
    await admin.hset('k:queue-wake', 'first', '1 w'); // as a waiter of a rolling deploy wrote it
    await turnStarted(admin, BARGE_WINDOW_MS);
    await releasedToFirst(admin, node);
    await wakeUps.heard(['1']);
    await admin.flushall();
  });

  /** The holder's release, which leaves the lock free (the turn is young). */
  async function releasedFree(admin: Redis, node: IORedisConnection) {
    expect(await releaseScript.run(node, release, 1_000)).toBe(1);
    expect(await admin.exists('k')).toBe(0);
  }

  /** The holder's release, which hands the lock over to the first waiter. */
  async function releasedToFirst(admin: Redis, node: IORedisConnection) {
    expect(await releaseScript.run(node, release, 1_000)).toBe(1);
    expect(await admin.get('k')).toBe('first');
  }

  /** The first release of a young turn (it wakes 'first'), then the holder's take back. */
  async function releasedOnceAndTakenBack(admin: Redis, node: IORedisConnection) {
    await heldWithTwoWaiting(admin, node);
    const now = await turnStarted(admin, 0);
    expect(await releaseScript.run(node, release, 1_000)).toBe(1);
    expect(await admin.hget('k:queue-turn', 'woken')).toBe('first');
    await admin.set('k', 'holder:1', 'PX', 10_000);
    return now;
  }

  it('within the window, a later release wakes nobody: the first waiter was woken in this turn', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    const wakeUps = await wakeUpsOn(admin, 'w');
    await releasedOnceAndTakenBack(admin, node);
    await releasedFree(admin, node);
    await admin.publish('w', 'end'); // delivered after any wake-up the releases sent
    await wakeUps.heard(['1', 'end']);
    await admin.flushall();
  });

  it('within the window, wakes the next waiter when the woken one is past its deadline', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    const wakeUps = await wakeUpsOn(admin, 'w');
    const now = await releasedOnceAndTakenBack(admin, node);
    await admin.zadd('k:queue-deadlines', now, 'first'); // gone: its deadline is now
    await releasedFree(admin, node); // still left free: the turn is young
    expect(await admin.zrange('k:queue', 0, -1)).toEqual(['second']);
    await wakeUps.heard(['1', '2']);
    await admin.flushall();
  });

  it('hands over once the turn is over, or starts after now, though its first waiter was woken', async () => {
    for (const ageMs of [BARGE_WINDOW_MS, -60_000]) {
      const admin = clocked().admin;
      const node = IORedisConnection.of(admin);
      await releasedOnceAndTakenBack(admin, node);
      await turnStarted(admin, ageMs);
      await releasedToFirst(admin, node);
      await admin.flushall();
    }
  });

  it('within the window, wakes a waiter that joined ahead of the woken one', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    const wakeUps = await wakeUpsOn(admin, 'w');
    await releasedOnceAndTakenBack(admin, node);
    const zero = plain('zero', 0);
    expect((await acquireInLineScript.run(node, zero, 1_000)).state).toBeGreaterThan(0);
    await releasedFree(admin, node);
    expect(await admin.hget('k:queue-turn', 'woken')).toBe('zero');
    await wakeUps.heard(['1', '0']);
    await admin.flushall();
  });

  it('within the window, hands over once a fair waiter joined after the first waiter was woken', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    await releasedOnceAndTakenBack(admin, node);
    const third = inLine('third', 3, { fair: true });
    expect((await acquireInLineScript.run(node, third, 1_000)).state).toBeGreaterThan(0);
    await releasedToFirst(admin, node);
    await admin.flushall();
  });

  it('once the window has passed: hands over to the first waiter and starts its turn', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    await heldWithTwoWaiting(admin, node);
    const now = await turnStarted(admin, BARGE_WINDOW_MS);
    await releasedToFirst(admin, node);
    expect(Number(await admin.hget('k:queue-turn', 'since'))).toBeGreaterThanOrEqual(now);
    await admin.flushall();
  });

  it("is over when the turn starts after the server's now (its clock went back): the release hands over", async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    await heldWithTwoWaiting(admin, node);
    // As if the turn had started, then the clock went back a minute: before, the window
    // stayed open for that minute.
    await turnStarted(admin, -60_000);
    await releasedToFirst(admin, node);
    await admin.flushall();
  });

  it('never while a fair waiter is in line: a release hands over, and a plain newcomer waits its turn', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    await heldWithTwoWaiting(admin, node, true);
    await turnStarted(admin, 0);
    await releasedToFirst(admin, node);
    // The hand-over to 'first' lapses while 'second' (fair) waits: the lock is not anyone's.
    await admin.del('k');
    expect((await acquireInLineScript.run(node, plain('newcomer', 3), 1_000)).state).toBe(-2);
    expect(await admin.exists('k')).toBe(0);
    expect(await admin.zrange('k:queue', 0, -1)).toEqual(['second', 'newcomer']);
    await admin.flushall();
  });

  it('hands over in a line without its turn (one an older distlock started), and gives the turn a TTL', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    await heldWithTwoWaiting(admin, node);
    await admin.del('k:queue-turn');
    await releasedToFirst(admin, node);
    // Before: the hand-over made the turn again with no expiry, left behind if the line died.
    expect(await admin.pttl('k:queue-turn')).toBeGreaterThan(0);
    await admin.flushall();
  });

  it('keeps no key once the line is empty', async () => {
    const admin = clocked().admin;
    const node = IORedisConnection.of(admin);
    await heldWithTwoWaiting(admin, node);
    for (const token of ['first', 'second']) {
      await leaveQueueScript.run(node, { key: 'k', token, granted: false }, 1_000);
    }
    expect((await admin.keys('*')).sort()).toEqual(['k']); // the holder's key alone
    await admin.flushall();
  });
});

describe('running a script', () => {
  it('keeps the commands sent behind its first call on a connection in order', async () => {
    const admin = fixture().admin[0] as Redis;
    await admin.set('k', 'tok:1');
    // A connection of its own: on the admin's, an earlier test may have run the script.
    const client = admin.duplicate();
    onTestFinished(() => client.disconnect());
    const node = IORedisConnection.of(client);
    const undo = { key: 'k', token: 'tok', attempt: 1, announce: false };
    const releasing = releaseScript.run(node, undo, 1_000);
    const taking = node.send('SET', ['k', 'next', 'NX'], 1_000);
    expect(await releasing).toBe(1);
    // Before: the EVALSHA failed with NOSCRIPT, the SET ran (the key was still held), and
    // then the EVAL deleted the key.
    expect(await taking).toBe('OK');
    expect(await admin.get('k')).toBe('next');
  });
});

describe('proclaim, refused for a recorded term not below its own', () => {
  /** Holds the election's lock for `tok` (attempt 1), with `record` as another leader's term. */
  async function refusedProclaim(admin: Redis, record: string, counter?: string) {
    await admin.flushall();
    await admin.set('e', 'tok:1', 'PX', 10_000);
    await admin.hset('e:leader', 'token', 'other', 'term', record, 'version', 1, 'value', 'a');
    if (counter !== undefined) await admin.set('e:fence', counter);
    const input = { key: 'e', leaderKey: 'e:leader', token: 'tok', attempt: 1, version: 1 };
    const proclaim = { ...input, term: 5n, value: 'b', channel: 'e:changes' };
    return proclaimScript.run(IORedisConnection.of(admin), proclaim, 1_000);
  }

  it('raises a counter below the record to it, and says so (-2)', async () => {
    const admin = fixture().admin[0] as Redis;
    expect(await refusedProclaim(admin, '1000', '4')).toBe(-2);
    expect(await admin.get('e:fence')).toBe('1000');
    expect(await admin.hget('e:leader', 'token')).toBe('other');
  });

  it('leaves a counter at or above the record as it is (-1)', async () => {
    const admin = fixture().admin[0] as Redis;
    expect(await refusedProclaim(admin, '1000', '2000')).toBe(-1);
    expect(await admin.get('e:fence')).toBe('2000');
    expect(await refusedProclaim(admin, '1000', '1000')).toBe(-1);
    expect(await admin.get('e:fence')).toBe('1000');
  });

  it('copies no record that is not a fence, or that INCR could not go past', async () => {
    const admin = fixture().admin[0] as Redis;
    // Not a decimal fence: compared as text it is "not below" 5, so the proclaim is refused.
    expect(await refusedProclaim(admin, '9x', '4')).toBe(-1);
    expect(await admin.get('e:fence')).toBe('4');
    // 2^63 - 1: copied, every later draw's INCR would fail on this node.
    expect(await refusedProclaim(admin, '9223372036854775807')).toBe(-1);
    expect(await admin.exists('e:fence')).toBe(0);
    expect(await refusedProclaim(admin, '9223372036854775806')).toBe(-2);
    expect(await admin.get('e:fence')).toBe('9223372036854775806');
  });
});
