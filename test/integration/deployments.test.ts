import { inspect } from 'node:util';
import { Redis as Redis6 } from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Locker, NoQuorumError } from '../../src/index.js';
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
  // About credentials only: no lease records, which would keep out a node that an earlier
  // locker could not reach (a wrong password) as one that may have restarted.
  const locker = new Locker({ nodes, restartGraceMs: 0 });
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
