import { describe, expect, it } from 'vitest';
import { Locker } from '../../src/index.js';
import { NO_IO, thrown } from '../support/validation.js';

/** A URL no test ever connects to: validation must throw before any connection is made. */
const UNUSED = 'redis://127.0.0.1:1';

describe('bad input is rejected synchronously, naming the field and the value', () => {
  const locker = new Locker({ nodes: [NO_IO] });

  it.each([
    [0, '`0` (number)'],
    [-1, '`-1` (number)'],
    [Number.NaN, '`NaN` (number)'],
    [Number.POSITIVE_INFINITY, '`Infinity` (number)'],
    [1.5, '`1.5` (number)'],
    ['1000', '`"1000"` (string)'],
    [undefined, '`undefined` (undefined)'],
  ])('ttlMs %s', (ttlMs, shown) => {
    const error = thrown(() => locker.acquire('r', { ttlMs: ttlMs as number }));
    expect(error.field).toBe('ttlMs');
    expect(error.message).toBe(`Expected \`ttlMs\` to be a positive integer, got ${shown}`);
    thrown(() => locker.tryAcquire('r', { ttlMs: ttlMs as number }));
  });

  it.each([[''], [42], [null], [undefined], [{}]])('resource %j', (resource) => {
    expect(thrown(() => locker.acquire(resource as string, { ttlMs: 1_000 })).field).toBe(
      'resource',
    );
  });

  it.each([[-1], [Number.NaN], ['10']])('waitMs %j', (waitMs) => {
    const error = thrown(() => locker.acquire('r', { ttlMs: 1_000, waitMs: waitMs as number }));
    expect(error.field).toBe('waitMs');
  });

  it('signal that is not an AbortSignal', () => {
    const signal = { aborted: false } as unknown as AbortSignal;
    expect(thrown(() => locker.acquire('r', { ttlMs: 1_000, signal })).field).toBe('signal');
  });

  it('ttl within the clock-drift allowance', () => {
    const error = thrown(() => locker.acquire('r', { ttlMs: 2 }));
    expect(error.message).toContain('longer than the clock-drift allowance');
  });

  it('ttl not longer than the configured node timeout', () => {
    const strict = new Locker({ nodes: [NO_IO], nodeTimeoutMs: 500 });
    const error = thrown(() => strict.acquire('r', { ttlMs: 500 }));
    expect(error.message).toContain('longer than `nodeTimeoutMs` (500)');
  });

  it.each([
    [{ nodes: [] }, 'nodes'],
    [{ nodes: 'redis://x' }, 'nodes'],
    [{}, 'nodes'],
    [{ nodes: [42] }, 'nodes[0]'],
    [{ nodes: ['http://127.0.0.1:6379'] }, 'nodes[0]'],
    [{ nodes: ['not a url'] }, 'nodes[0]'],
    [{ nodes: [UNUSED, 'redis://127.0.0.1:2', UNUSED] }, 'nodes[2]'],
    [{ nodes: ['redis://localhost:1', UNUSED] }, 'nodes[1]'],
    [{ nodes: [UNUSED], driftFactor: 0.5 }, 'driftFactor'],
    [{ nodes: [UNUSED], driftFactor: -0.1 }, 'driftFactor'],
    [{ nodes: [UNUSED], nodeTimeoutMs: 0 }, 'nodeTimeoutMs'],
    [{ nodes: [UNUSED], retryDelayMs: '100' }, 'retryDelayMs'],
    [{ nodes: [UNUSED], prefix: 7 }, 'prefix'],
    [{ nodes: [UNUSED], prefix: 'app{locks}:' }, 'prefix'],
    [{ nodes: [UNUSED], prefix: 'app}' }, 'prefix'],
    [{ nodes: [UNUSED], onEvictionRisk: 'loud' }, 'onEvictionRisk'],
    [{ nodes: [UNUSED], restartGraceMs: -1 }, 'restartGraceMs'],
    [{ nodes: [UNUSED], restartGraceMs: 1.5 }, 'restartGraceMs'],
    [{ nodes: [UNUSED], restartGraceMs: '10000' }, 'restartGraceMs'],
    [{ nodes: [UNUSED], restartGraceMs: 2 ** 31 }, 'restartGraceMs'],
    [{ nodes: [UNUSED], startupWaitMs: -1 }, 'startupWaitMs'],
    [{ nodes: [UNUSED], startupWaitMs: 1.5 }, 'startupWaitMs'],
    [{ nodes: [UNUSED], startupWaitMs: '30000' }, 'startupWaitMs'],
    [{ nodes: [UNUSED], startupWaitMs: Number.NaN }, 'startupWaitMs'],
    [{ nodes: [UNUSED], replicaAcks: -1, nodeTimeoutMs: 300 }, 'replicaAcks'],
    [{ nodes: [UNUSED], replicaAcks: 1.5, nodeTimeoutMs: 300 }, 'replicaAcks'],
    // Redis answers a timed-out WAIT up to 100 ms late: too short a timeout marks nodes silent.
    [{ nodes: [UNUSED], replicaAcks: 1 }, 'nodeTimeoutMs'],
    [{ nodes: [UNUSED], replicaAcks: 1, nodeTimeoutMs: 150 }, 'nodeTimeoutMs'],
    // WAIT has no key: on a cluster it would not reach the master that took the lock.
    [
      { nodes: [{ isCluster: true, slots: [] }], replicaAcks: 1, nodeTimeoutMs: 300 },
      'replicaAcks',
    ],
  ])('locker options %j', (options, field) => {
    expect(thrown(() => new Locker(options as never)).field).toBe(field);
  });

  it.each([
    'redis:/u:s3cret@[bad', // parses with the password in the path: a socket path to ioredis
    'redis:u:s3cret@host',
    'http://u:s3cret@127.0.0.1:6379',
    'redis://u:s3cret@127.0.0.1:notaport',
    'redis://',
  ])(
    'a node URL without a host, or not a URL, is rejected without echoing its password: %s',
    (url) => {
      const error = thrown(() => new Locker({ nodes: [url] }));
      expect(error.field).toBe('nodes[0]');
      expect(error.message).toContain('a redis:// or rediss:// URL with a host');
      expect(error.message).not.toMatch(/s3cret/);
    },
  );

  it('the same client object twice', () => {
    const connection = { name: 'a:1', send: async () => 0, close: async () => {} };
    const error = thrown(() => new Locker({ nodes: [connection, connection] }));
    expect(error.field).toBe('nodes[1]');
    expect(error.message).toContain('inflate the quorum');
  });
});

describe('durations a timer cannot hold are rejected (a longer timer fires after 1 ms)', () => {
  const locker = new Locker({ nodes: [NO_IO] });

  it.each([
    [2 ** 31, 'ttlMs'],
    [2 ** 33, 'ttlMs'],
    [1e12, 'ttlMs'],
  ])('ttlMs %d', (ttlMs, field) => {
    const error = thrown(() => locker.acquire('r', { ttlMs }));
    expect(error.field).toBe(field);
    expect(error.message).toContain('at most 2147483647 ms (about 24.9 days');
  });

  it('accepts the longest ttl a timer holds', async () => {
    const none = { ...NO_IO, send: async () => Promise.reject(new Error('offline')) };
    const offline = new Locker({ nodes: [none] });
    await expect(offline.acquire('r', { ttlMs: 2 ** 31 - 1, waitMs: 0 })).rejects.toMatchObject({
      code: 'NO_QUORUM',
    });
  });

  it.each([
    [{ nodes: [UNUSED], nodeTimeoutMs: 2 ** 31 }, 'nodeTimeoutMs'],
    [{ nodes: [UNUSED], retryDelayMs: 2 ** 31 }, 'retryDelayMs'],
    [{ nodes: [UNUSED], retryDelayMs: 1_431_655_765 }, 'retryDelayMs'],
  ])('locker options %j', (options, field) => {
    expect(thrown(() => new Locker(options as never)).field).toBe(field);
  });

  it('a ttlMs above the default maxHoldMs (one hour) needs no maxHoldMs; a shorter one is refused', async () => {
    const none = { ...NO_IO, send: async () => Promise.reject(new Error('offline')) };
    const offline = new Locker({ nodes: [none] });
    const twoHours = { ttlMs: 7_200_000, autoExtend: true, waitMs: 0 };
    await expect(offline.acquire('r', twoHours)).rejects.toMatchObject({ code: 'NO_QUORUM' });
    expect(thrown(() => offline.acquire('r', { ...twoHours, maxHoldMs: 3_600_000 })).field).toBe(
      'maxHoldMs',
    );
  });

  it('extend past the timer limit', async () => {
    const none = { ...NO_IO, send: async () => 'OK' };
    const lock = await new Locker({ nodes: [none] }).acquire('r', { ttlMs: 1_000 });
    expect(thrown(() => lock.extend(2 ** 31)).field).toBe('ttlMs');
  });
});

describe('names that are not well-formed Unicode are rejected', () => {
  const locker = new Locker({ nodes: [NO_IO] });

  it.each([['\uD800'], ['\uDC00'], ['a\uD83D'], ['\uDE00b']])('resource %j', (resource) => {
    // Both lone surrogates would reach Redis as U+FFFD: two resources, one lock.
    const error = thrown(() => locker.acquire(resource, { ttlMs: 1_000 }));
    expect(error.field).toBe('resource');
    expect(error.message).toContain('well-formed Unicode');
  });

  it('accepts surrogate pairs (emoji)', async () => {
    const none = { ...NO_IO, send: async () => Promise.reject(new Error('offline')) };
    const offline = new Locker({ nodes: [none] });
    await expect(offline.acquire('🔒', { ttlMs: 1_000, waitMs: 0 })).rejects.toMatchObject({
      code: 'NO_QUORUM',
    });
  });

  it('prefix', () => {
    expect(thrown(() => new Locker({ nodes: [UNUSED], prefix: '\uD800:' })).field).toBe('prefix');
    // A brace of its own would move every key's hash tag, or share keys with another prefix.
    expect(thrown(() => new Locker({ nodes: [UNUSED], prefix: '{locks}:' })).message).toMatch(
      /`prefix`.*without `\{` or `\}`/,
    );
  });
});
