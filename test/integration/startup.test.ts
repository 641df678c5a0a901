import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { CONNECT_WAIT_MS } from '../../src/driver/connection.js';
import { Locker, type LockerOptions, NoQuorumError } from '../../src/index.js';
import { RedisServer } from '../../src/testing/index.js';
import { freePort } from '../../src/testing/ports.js';

/** Per-node timeout of these lockers: the first attempt costs at most this. */
const NODE_TIMEOUT_MS = 200;
/** Mean pause between attempts. */
const RETRY_DELAY_MS = 100;
/**
 * How long an acquisition may take to give up on nodes it never reached: the wait for the
 * connections being opened, one attempt, and one more (for a connection still opening when
 * the first attempt went out) after the longest pause.
 */
const GIVE_UP_MS = CONNECT_WAIT_MS + 2 * NODE_TIMEOUT_MS + 1.5 * RETRY_DELAY_MS;
/** Far longer than {@link GIVE_UP_MS}: what the acquisitions are allowed to wait. */
const WAIT_MS = 60_000;

const lockers: Locker[] = [];
const servers: RedisServer[] = [];
afterEach(async () => {
  await Promise.all(lockers.splice(0).map((locker) => locker.close()));
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

function locker(nodes: readonly string[], options: Partial<LockerOptions> = {}): Locker {
  const made = new Locker({
    nodes,
    nodeTimeoutMs: NODE_TIMEOUT_MS,
    retryDelayMs: RETRY_DELAY_MS,
    ...options,
  });
  lockers.push(made);
  return made;
}

async function server(): Promise<RedisServer> {
  const started = await RedisServer.start();
  servers.push(started);
  return started;
}

/** A loopback URL where nothing listens. */
async function nothingAt(): Promise<string> {
  return `redis://127.0.0.1:${await freePort()}`;
}

/** What `acquire` settles with, the caller's patience ending after `ms`. */
async function acquireWithin(l: Locker, ms: number): Promise<unknown> {
  const signal = AbortSignal.timeout(ms);
  return l.acquire('r', { ttlMs: 5_000, waitMs: WAIT_MS, signal }).catch((error) => error);
}

describe('nodes that refuse connections from the start', () => {
  it('fail the first acquisition within a connect wait, naming each address, its error and startupWaitMs', async () => {
    const url = await nothingAt();
    const error = await acquireWithin(locker([url]), GIVE_UP_MS);
    expect(error).toBeInstanceOf(NoQuorumError);
    const { message } = error as NoQuorumError;
    const address = url.slice('redis://'.length);
    expect(message).toContain(`Gave up early: ${address} never answered`);
    expect(message).toMatch(/ECONNREFUSED/);
    expect(message).toContain('`startupWaitMs`');
  });

  it('fail it when they deny a majority, and not when the others make one', async () => {
    const up = await server();
    const [a, b] = [await nothingAt(), await nothingAt()];
    const error = await acquireWithin(locker([a, up.url, b]), GIVE_UP_MS);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect((error as NoQuorumError).nodes.map((n) => n.outcome)).toEqual(['error', 'yes', 'error']);

    const other = await server();
    // restartGraceMs: 0, no lease records: `up` has one, and `other`, younger than it and
    // without one of its own, would abstain as a node that may have restarted.
    const lock = await acquireWithin(
      locker([a, up.url, other.url], { restartGraceMs: 0 }),
      GIVE_UP_MS,
    );
    expect(lock).not.toBeInstanceOf(Error);
  });

  it('are waited for within startupWaitMs: a Redis that starts later is used', async () => {
    const late = await server();
    await late.kill();
    const l = locker([late.url], { startupWaitMs: WAIT_MS });
    const acquiring = acquireWithin(l, WAIT_MS);
    await once(l.events, 'retry'); // refused at least once, and still trying
    await late.restart();
    const lock = await acquiring;
    expect(lock).not.toBeInstanceOf(Error);
  });

  it('are waited for until startupWaitMs is over, then not', async () => {
    const startupWaitMs = 500;
    const l = locker([await nothingAt()], { startupWaitMs });
    const startedAt = performance.now();
    const error = await acquireWithin(l, startupWaitMs + GIVE_UP_MS);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(startupWaitMs);
  });
});

describe('a node that answered once and then refuses connections', () => {
  it('is waited for within waitMs, as any failed node', async () => {
    const node = await server();
    const l = locker([node.url]);
    l.events.on('warning', () => {}); // the restart is expected: another run_id
    const first = await l.acquire('r', { ttlMs: 5_000 });
    expect(await first.release()).toBe('released');
    await node.kill();
    const acquiring = acquireWithin(l, WAIT_MS);
    await once(l.events, 'retry');
    await node.restart();
    const lock = await acquiring;
    expect(lock).not.toBeInstanceOf(Error);
  });

  it('still ends the wait at waitMs', async () => {
    const node = await server();
    const l = locker([node.url]);
    await (await l.acquire('r', { ttlMs: 5_000 })).release();
    await node.kill();
    const waitMs = 500;
    const startedAt = performance.now();
    const error = await l.acquire('r', { ttlMs: 5_000, waitMs }).catch((e) => e);
    expect(error).toBeInstanceOf(NoQuorumError);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(waitMs);
  });
});
