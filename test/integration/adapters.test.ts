import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import { Redis as IORedis5 } from 'ioredis';
import { Redis as IORedis6 } from 'ioredis6';
import { Redis as IOValkey } from 'iovalkey';
import { createClient as createNodeRedis5 } from 'redis';
import { createClient as createNodeRedis6 } from 'redis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adaptClient, type RedisClient } from '../../src/driver/clients.js';
import { NotSentError, type RedisConnection } from '../../src/driver/connection.js';
import { fencedPeek, fencedReadForUpdate, fencedWrite, Locker } from '../../src/index.js';
import { defineScript } from '../../src/lua/script.js';
import type { RedisServer } from '../../src/testing/index.js';
import { useRedis } from '../support/redis.js';

/**
 * The adapter conformance suite: the same cases against every client library distlock takes
 * directly, on real redis-server processes (three, shared by every case; node 0 is the one
 * killed and restarted).
 */
const fixture = useRedis(3);

/** The readiness wait given to each command. */
const TIMEOUT_MS = 1_000;
/** The readiness wait of the commands sent while the node is down. */
const DOWN_TIMEOUT_MS = 300;

/** A client of one library, connected to one node. */
interface Opened {
  readonly client: RedisClient;
  close(): unknown;
}

interface Library {
  readonly name: string;
  open(port: number): Promise<Opened>;
  /**
   * Whether its subscriber reports each reconnection (`onReady`). valkey-glide reports none:
   * it renews its subscriptions by itself.
   */
  readonly reportsReconnects: boolean;
}

/**
 * The options docs/options-and-errors.md ("Connections") asks of ioredis clients: nothing
 * queued, nothing re-sent.
 */
const IOREDIS_OPTIONS = {
  host: '127.0.0.1',
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  retryStrategy: () => 50,
};

const LIBRARIES: readonly Library[] = [
  {
    name: 'ioredis 5',
    reportsReconnects: true,
    async open(port) {
      const client = new IORedis5({ ...IOREDIS_OPTIONS, port });
      await once(client, 'ready');
      return { client, close: () => client.disconnect() };
    },
  },
  {
    name: 'ioredis 6 (RESP3)',
    reportsReconnects: true,
    async open(port) {
      const client = new IORedis6({ ...IOREDIS_OPTIONS, port });
      await once(client, 'ready');
      return { client, close: () => client.disconnect() };
    },
  },
  {
    name: 'iovalkey',
    reportsReconnects: true,
    async open(port) {
      const client = new IOValkey({ ...IOREDIS_OPTIONS, port });
      await once(client, 'ready');
      return { client, close: () => client.disconnect() };
    },
  },
  {
    name: 'node-redis 5',
    reportsReconnects: true,
    async open(port) {
      const client = createNodeRedis5({
        url: `redis://127.0.0.1:${port}`,
        socket: { reconnectStrategy: () => 50 },
      });
      adaptClient(client); // its 'error' listener, which node-redis requires
      await client.connect();
      return { client, close: () => client.destroy() };
    },
  },
  {
    name: 'node-redis 6 (RESP3)',
    reportsReconnects: true,
    async open(port) {
      const client = createNodeRedis6({
        url: `redis://127.0.0.1:${port}`,
        socket: { reconnectStrategy: () => 50 },
      });
      adaptClient(client);
      await client.connect();
      return { client, close: () => client.destroy() };
    },
  },
  {
    name: 'valkey-glide',
    reportsReconnects: false,
    async open(port) {
      const client = await GlideClient.createClient({
        addresses: [{ host: '127.0.0.1', port }],
        requestTimeout: 250,
        connectionBackoff: { numberOfRetries: 4, factor: 25, exponentBase: 2 },
      });
      return { client, close: () => client.close() };
    },
  },
];

Logger.setLoggerConfig('off'); // valkey-glide logs every error reply the cases provoke

/** What the cases measured, per library, printed after the suite. */
const measured = new Map<string, Record<string, number>>();

afterAll(() => {
  const rows = [...measured].map(([name, figures]) => ({ library: name, ...figures }));
  console.info('adapter figures (ms):');
  console.table(rows);
});

describe.each(LIBRARIES)('$name', (library) => {
  const opened: Opened[] = [];
  const connections: RedisConnection[] = [];
  const figures: Record<string, number> = {};
  measured.set(library.name, figures);
  const server = () => fixture().redis.nodes[0] as RedisServer;
  const admin = () => fixture().admin[0] as IORedis5;
  const node = () => connections[0] as RedisConnection;

  beforeAll(async () => {
    for (const { port } of fixture().redis.nodes) opened.push(await library.open(port));
    for (const { client } of opened) connections.push(adaptClient(client) as RedisConnection);
  });

  afterAll(async () => {
    await Promise.all(opened.map((o) => o.close()));
  });

  it('names the node host:port, with one adapter per client', () => {
    const ports = fixture().redis.nodes.map((n) => n.port);
    expect(connections.map((c) => c.name)).toEqual(ports.map((port) => `127.0.0.1:${port}`));
    expect(adaptClient(opened[0]?.client)).toBe(connections[0]);
  });

  it('answers in the contract reply shapes', async () => {
    const send = (command: string, ...args: (string | number)[]) =>
      node().send(command, args, TIMEOUT_MS);
    expect(await send('SET', 'k', 'v')).toBe('OK');
    expect(await send('GET', 'k')).toBe('v');
    expect(await send('GET', 'missing')).toBeNull();
    expect(await send('INCR', 'n')).toBe(1);
    expect(await send('PTTL', 'k')).toBe(-1);
    expect(await send('HSET', 'h', 'a', '1')).toBe(1);
    expect(await send('HMGET', 'h', 'a', 'b')).toEqual(['1', null]);
    expect(await send('HGETALL', 'h')).toEqual(['a', '1']); // a map in RESP3
    expect(await send('SADD', 's', 'x')).toBe(1);
    expect(await send('SMEMBERS', 's')).toEqual(['x']); // a set in RESP3
    const nested = "return {1, 'two', {3, false, -4}, redis.call('GET', KEYS[1]), 5}";
    expect(await send('EVAL', nested, 1, 'k')).toEqual([1, 'two', [3, null, -4], 'v', 5]);
    expect(await send('EVAL', 'return nil', 0)).toBeNull();
    expect(await send('EVAL', "return redis.call('GET', 'missing')", 0)).toBeNull();
    expect(await send('EVAL', 'return 7', 0)).toBe(7);
    expect(await send('EVAL', "return '7'", 0)).toBe('7');
    expect(await send('WAIT', 0, 0)).toBe(0);
    expect(await send('PUBLISH', 'nobody', '')).toBe(0);
    const info = await send('INFO');
    expect(typeof info).toBe('string');
    expect(info).toMatch(/^# Server\r\n[\s\S]*run_id:[0-9a-f]{40}/);
  });

  it('rejects an error reply with an Error whose message starts with the Redis error code', async () => {
    const send = (command: string, ...args: (string | number)[]) =>
      node().send(command, args, TIMEOUT_MS);
    const noScript = await send('EVALSHA', '0'.repeat(40), 0).catch((e: unknown) => e);
    expect(noScript).toBeInstanceOf(Error);
    expect((noScript as Error).message).toMatch(/^NOSCRIPT No matching script/);
    await send('SET', 'k', 'v');
    await expect(send('HGET', 'k', 'f')).rejects.toThrow(/^WRONGTYPE Operation against a key/);
    await expect(send('SET', 'k', 'v', 'PX', -1)).rejects.toThrow(/^ERR invalid expire time/);
    await expect(send('EVAL', "return redis.error_reply('MYCODE went wrong')", 0)).rejects.toThrow(
      /^MYCODE went wrong$/,
    );

    // The scripts' own path: EVAL on a connection's first call, then EVALSHA; after a SCRIPT
    // FLUSH, EVALSHA, NOSCRIPT, EVAL.
    const echo = defineScript({
      name: 'echo',
      lua: 'return {KEYS[1], ARGV[1]}',
      keys: (input: { key: string; value: string }) => [input.key],
      args: (input) => [input.value],
      parse: (reply) => reply,
    });
    expect(await admin().script('EXISTS', echo.sha1)).toEqual([0]);
    expect(await echo.run(node(), { key: 'a', value: 'b' }, TIMEOUT_MS)).toEqual(['a', 'b']);
    expect(await admin().script('EXISTS', echo.sha1)).toEqual([1]);
    await admin().script('FLUSH');
    expect(await echo.run(node(), { key: 'a', value: 'c' }, TIMEOUT_MS)).toEqual(['a', 'c']);
    expect(await admin().script('EXISTS', echo.sha1)).toEqual([1]);
  });

  it('hands a lock over pub/sub to a waiter, fences and releases, on 3 nodes given as its clients', async () => {
    const clients = opened.map((o) => o.client);
    const holder = new Locker({ nodes: clients });
    // Polling alone would take 1-3 s: the hand-off below must come from the release message.
    const waiter = new Locker({ nodes: clients, retryDelayMs: 2_000 });
    try {
      const first = await holder.acquire('invoice', { ttlMs: 10_000, fencing: true });
      const pausing = new Promise<void>((resolve) => {
        waiter.events.on('retry', ({ delayMs }) => {
          if (delayMs > 0) resolve();
        });
      });
      const waiting = waiter.acquire('invoice', { ttlMs: 10_000, waitMs: 8_000, fencing: true });
      await pausing; // subscribed, and sleeping out its long retry delay
      const releasedAt = performance.now();
      expect(await first.release()).toBe('released');
      const second = await waiting;
      figures.handOff = Math.round(performance.now() - releasedAt);
      expect(figures.handOff).toBeLessThan(500);

      const [firstFence, secondFence] = [first.fence as bigint, second.fence as bigint];
      expect(secondFence).toBeGreaterThan(firstFence);
      const store = clients[1] as RedisClient;
      expect(await fencedReadForUpdate(store, 'invoice:total', secondFence)).toEqual({
        value: null,
      });
      expect(await fencedWrite(store, 'invoice:total', secondFence, '120')).toBe('applied');
      expect(await fencedWrite(store, 'invoice:total', firstFence, '100')).toBe('stale');
      expect(await fencedReadForUpdate(store, 'invoice:total', firstFence)).toBe('stale');
      expect(await fencedPeek(store, 'invoice:total')).toEqual({
        value: '120',
        fence: secondFence,
      });
      expect(await second.release()).toBe('released');
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
    // The lockers closed only what they opened: the caller's clients still work.
    expect(await node().send('PING', [], TIMEOUT_MS)).toBe('PONG');
  });

  it('undoes a SET that timed out on a paused node, once the node goes on', async () => {
    const locker = new Locker({ nodes: [opened[0]?.client as RedisClient], nodeTimeoutMs: 300 });
    try {
      await (await locker.acquire('warm-up', { ttlMs: 5_000 })).release();
      server().pause(); // the SET reaches the socket, and is answered only after the resume
      const error = await locker.acquire('paused', { ttlMs: 30_000, waitMs: 0 }).catch((e) => e);
      expect(error).toBeInstanceOf(Error);
      await delay(100);
      server().resume();
      await untilAnswers(node());
      await delay(200);
      // The undo was sent behind the SET, not held back until the node proved it was up.
      expect(await admin().exists('distlock:{paused}')).toBe(0);
    } finally {
      if (server().paused) server().resume();
      await locker.close();
    }
  });

  it('fails fast with NotSentError while the node is down, and sends nothing once it is back', async () => {
    await server().kill();
    // The first command may be what tells the client the node is gone (valkey-glide reports
    // no connection events; it fails this one after its requestTimeout).
    let started = performance.now();
    const first = await node()
      .send('SET', ['first', '1'], DOWN_TIMEOUT_MS)
      .catch((e: unknown) => e);
    figures.firstFailure = Math.round(performance.now() - started);
    expect(first).toBeInstanceOf(Error);
    if (library.reportsReconnects) expect(first).toBeInstanceOf(NotSentError);

    started = performance.now();
    const notSent = await node()
      .send('SET', ['down', '1'], DOWN_TIMEOUT_MS)
      .catch((e: unknown) => e);
    figures.notSent = Math.round(performance.now() - started);
    expect(notSent).toBeInstanceOf(NotSentError);
    expect(figures.notSent).toBeLessThan(DOWN_TIMEOUT_MS + 150);

    await delay(300); // past valkey-glide's requestTimeout: nothing of ours is parked in it
    await server().restart();
    figures.reconnect = await untilAnswers(node());
    await delay(200);
    expect(await admin().mget('first', 'down')).toEqual([null, null]);
  });

  it('changes its generation when the connection is re-established (when it can tell)', async () => {
    const before = node().generation;
    expect(node().generation).toBe(before); // stable while nothing happens
    await server().restart();
    await untilAnswers(node());
    if (library.reportsReconnects) {
      // Before: no generation, so a restarted node's votes counted before distlock noticed.
      expect(typeof before).toBe('number');
      expect(node().generation).not.toBe(before);
    } else {
      expect(before).toBeUndefined(); // distlock reads its identity again every second
    }
  });

  it('does not re-send a command that was in flight when the node died', async () => {
    server().pause(); // the command reaches the socket but gets no answer
    const inFlight = node()
      .send('SET', ['in-flight', '1'], TIMEOUT_MS)
      .catch((e: unknown) => e);
    await delay(50);
    await server().kill();
    expect(await inFlight).toBeInstanceOf(Error);
    await server().restart();
    await untilAnswers(node());
    await delay(200);
    expect(await admin().get('in-flight')).toBeNull();
  });

  it('never sends later a command still queued in the client when the connection fails', async () => {
    server().pause(); // it stops reading: the socket fills up, and the client queues the rest
    const filler = 'x'.repeat(1 << 20);
    const fillers = Array.from({ length: 24 }, (_, i) =>
      node()
        .send('SET', [`filler:${i}`, filler], TIMEOUT_MS)
        .catch((e: unknown) => e),
    );
    const queued = node()
      .send('SET', ['queued', '1'], TIMEOUT_MS)
      .catch((e: unknown) => e);
    await delay(50);
    await server().kill();
    // Each one fails, none waits for the node to come back.
    const outcomes = await Promise.all([...fillers, queued].map((o) => settledWithin(o, 2_000)));
    for (const outcome of outcomes) expect(outcome).toBeInstanceOf(Error);
    await server().restart();
    await untilAnswers(node());
    await delay(200);
    expect(await admin().exists('queued')).toBe(0);
  });

  it('opens a subscriber while the node is down, subscribed once it is back', async () => {
    await server().kill();
    const received: string[] = [];
    const subscriber = node().openSubscriber?.(
      (channel) => received.push(channel),
      () => subscriber?.subscribe('released').catch(() => undefined),
    );
    if (!subscriber) throw new Error(`${library.name}: no subscriber`);
    try {
      subscriber.subscribe('released').catch(() => undefined); // fails, or waits for the node
      await delay(300);
      await server().restart();
      await untilDelivered(() => received.length > 0);
    } finally {
      await subscriber.close();
    }
  });

  it('opens a subscriber that receives PUBLISH, also after the node restarts', async () => {
    const received: string[] = [];
    let readies = 0;
    let wanted = false;
    const subscriber = node().openSubscriber?.(
      (channel) => received.push(channel),
      () => {
        readies++;
        // What the locker does: subscribe again to every channel it wants.
        if (wanted) subscriber?.subscribe('released').catch(() => undefined);
      },
    );
    if (!subscriber) throw new Error(`${library.name}: no subscriber`);
    try {
      wanted = true;
      await subscriber.subscribe('released');
      expect(await admin().publish('released', '')).toBe(1);
      await until(() => received.length === 1);
      expect(received).toEqual(['released']);
      expect(readies).toBe(1);

      await server().restart();
      if (library.reportsReconnects) await until(() => readies === 2);
      await untilDelivered(() => received.length > 1);
      if (!library.reportsReconnects) expect(readies).toBe(1);

      wanted = false;
      await subscriber.unsubscribe('released');
      await until(async () => (await admin().publish('released', '')) === 0);
    } finally {
      await subscriber.close();
    }
  });

  it('tells of a lost or new subscriber connection before any message that connection brings', async () => {
    // A hand-over counted from its message must come from the server its waiter's request
    // reached: the locker notes each (re)connection, and a message after one does not count.
    const events: string[] = [];
    const subscriber = node().openSubscriber?.(
      (_channel, message) =>
        events.push(message === 'new' ? 'message from the new server' : 'message'),
      () => {
        events.push('ready');
        subscriber?.subscribe('released').catch(() => undefined);
      },
      () => events.push('lost'),
    );
    if (!subscriber) throw new Error(`${library.name}: no subscriber`);
    try {
      await subscriber.subscribe('released');
      await untilDelivered(() => events.includes('message'));
      const before = events.length;
      await server().restart();
      // Published without pause, so that one reaches the new connection the moment it is
      // subscribed again, in the same read as the subscription's own reply if it can.
      const fresh = 'message from the new server';
      let flooding = true;
      const flood = (async () => {
        while (flooding)
          await admin()
            .publish('released', 'new')
            .catch(() => delay(1));
      })();
      await until(() => events.slice(before).includes(fresh));
      flooding = false;
      await flood;
      const after = events.slice(before);
      const told = after.findIndex((event) => event === 'lost' || event === 'ready');
      // A client that does not report reconnects never counts a hand-over from its message.
      if (library.reportsReconnects) expect(told).toBeGreaterThanOrEqual(0);
      if (told >= 0) expect(after.indexOf(fresh)).toBeGreaterThan(told);
    } finally {
      await subscriber.close();
    }
  });

  /** Publishes until the subscriber got one (it may still be subscribing after a restart). */
  async function untilDelivered(delivered: () => boolean): Promise<void> {
    await until(async () => {
      await admin()
        .publish('released', '')
        .catch(() => undefined);
      await delay(20);
      return delivered();
    });
  }
});

/** Waits until the connection answers a PING again; returns how long that took. */
async function untilAnswers(connection: RedisConnection): Promise<number> {
  const started = performance.now();
  await until(async () => {
    const reply = await connection.send('PING', [], 200).catch(() => undefined);
    return reply === 'PONG';
  });
  return Math.round(performance.now() - started);
}

/** What `outcome` settled with within `ms`, or 'pending'. */
function settledWithin(outcome: Promise<unknown>, ms: number): Promise<unknown> {
  return Promise.race([outcome, delay(ms, 'pending', { ref: false })]);
}

/** Polls `done` every 20 ms for at most 5 s. */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 5_000;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`not done in 5 s: ${done.toString()}`);
    await delay(20);
  }
}

describe.each([
  ['node-redis 5', (url: string): RedisClient => createNodeRedis5({ url })],
  ['node-redis 6', (url: string): RedisClient => createNodeRedis6({ url })],
] as const)('a %s client never connected', (_, createClient) => {
  it('fails at once, naming the fix, instead of after the wait', async () => {
    const port = fixture().redis.nodes[0]?.port;
    const client = createClient(`redis://127.0.0.1:${port}`);
    const locker = new Locker({ nodes: [client] });
    const waitMs = 5_000;
    try {
      const started = performance.now();
      const error = await locker.acquire('r', { ttlMs: 1_000, waitMs }).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/never connected: call `await client.connect\(\)`/);
      expect(performance.now() - started).toBeLessThan(waitMs / 2); // not retried
    } finally {
      await locker.close();
    }
  });

  it('says closed, not never connected, of a client its caller connected and then closed', async () => {
    const port = fixture().redis.nodes[0]?.port;
    const client = createClient(`redis://127.0.0.1:${port}`) as RedisClient & {
      connect(): Promise<unknown>;
      destroy(): void;
    };
    await client.connect(); // before distlock ever sees it
    const locker = new Locker({ nodes: [client] });
    try {
      client.destroy();
      const error = await locker.acquire('r', { ttlMs: 1_000, waitMs: 0 }).catch((e) => e);
      expect((error as Error).message).toMatch(/\(closed\)/);
      expect((error as Error).message).not.toMatch(/never connected/);
    } finally {
      await locker.close();
    }
  });
});

describe.each([
  ['ioredis 5', (options: object) => new IORedis5(options)],
  ['ioredis 6', (options: object) => new IORedis6(options)],
  ['iovalkey', (options: object) => new IOValkey(options)],
] as const)('a %s client with a keyPrefix', (_, open) => {
  it('sends every command to the same prefixed keys: the lock commands as the others', async () => {
    const port = fixture().redis.nodes[1]?.port;
    const client = open({ ...IOREDIS_OPTIONS, port, keyPrefix: 'app:' });
    const raw = new IORedis5({ ...IOREDIS_OPTIONS, port });
    try {
      await Promise.all([once(client, 'ready'), once(raw, 'ready')]);
      const node = adaptClient(client) as RedisConnection;
      const send = (command: string, ...args: (string | number)[]) =>
        node.send(command, args, TIMEOUT_MS);
      await raw.del('prefixed', 'app:prefixed');
      expect(await send('SET', 'prefixed', 'v', 'PX', 10_000, 'NX')).toBe('OK');
      const stored = (await raw.exists('app:prefixed')) === 1 ? 'app:prefixed' : 'prefixed';
      // Wherever the client put it, GET and a script's KEYS[1] find it under the same name.
      expect(await send('GET', 'prefixed')).toBe('v');
      expect(await send('EVAL', "return redis.call('GET', KEYS[1])", 1, 'prefixed')).toBe('v');
      expect(await raw.get(stored)).toBe('v');
    } finally {
      client.disconnect();
      raw.disconnect();
    }
  });
});
