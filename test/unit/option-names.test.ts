import { describe, expect, it } from 'vitest';
import { closestName } from '../../src/config/option-names.js';
import { Locker, schedule } from '../../src/index.js';
import { openTelemetry } from '../../src/telemetry/opentelemetry.js';
import {
  RedisServer,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
} from '../../src/testing/index.js';
import { NO_IO, thrown } from '../support/validation.js';

describe('a misspelled option is rejected, naming it and the option it likely meant', () => {
  const locker = new Locker({ nodes: [NO_IO] });

  it('new Locker({ ttl }) says where a TTL goes', () => {
    const error = thrown(() => new Locker({ nodes: [NO_IO], ttl: 5 } as never));
    expect(error.field).toBe('ttl');
    expect(error.message).toBe(
      'Expected `ttl` to be absent (not an option of new Locker(); `ttlMs` is an option of acquire), got a value of type number',
    );
  });

  it('acquire(k, { retryDelayMs }) says it is an option of the Locker', () => {
    const error = thrown(() => locker.acquire('r', { ttlMs: 1_000, retryDelayMs: 5 } as never));
    expect(error.field).toBe('retryDelayMs');
    expect(error.message).toContain('`retryDelayMs` is an option of new Locker()');
  });

  it.each([
    [{ nodes: [NO_IO], nodeTimeout: 50 }, 'nodeTimeout', 'nodeTimeoutMs'],
    [{ nodes: [NO_IO], retrydelayms: 50 }, 'retrydelayms', 'retryDelayMs'],
    [{ nodes: [NO_IO], drift_factor: 0.01 }, 'drift_factor', 'driftFactor'],
    [{ node: [NO_IO] }, 'node', 'nodes'],
    [{ clients: [NO_IO] }, 'clients', 'nodes'], // node-redlock's name
    [{ nodes: [NO_IO], timeout: 50 }, 'timeout', 'nodeTimeoutMs'],
  ])('new Locker(%j)', (options, field, meant) => {
    const error = thrown(() => new Locker(options as never));
    expect(error.field).toBe(field);
    expect(error.message).toContain(`did you mean \`${meant}\`?`);
  });

  it('acquire(k, { ttl }), before any I/O', () => {
    const error = thrown(() => locker.acquire('r', { ttl: 5000 } as never));
    expect(error.field).toBe('ttl');
    expect(error.message).toBe(
      'Expected `ttl` to be absent (not an option of acquire; did you mean `ttlMs`?), got a value of type number',
    );
  });

  it.each([
    [{ ttlMs: 1_000, wait: 10 }, 'wait', 'waitMs'],
    [{ ttlMs: 1_000, autoextend: true }, 'autoextend', 'autoExtend'],
    [{ ttlMs: 1_000, maxHold: 10_000 }, 'maxHold', 'maxHoldMs'],
    [{ ttlMs: 1_000, fencnig: true }, 'fencnig', 'fencing'], // two letters swapped
    [{ ttlMs: 1_000, retryCount: 3 }, 'retryCount', 'waitMs'], // node-redlock's name
    [{ lockTimeout: 1_000 }, 'lockTimeout', 'ttlMs'], // redis-semaphore's name
  ])('acquire(k, %j)', (options, field, meant) => {
    const error = thrown(() => locker.acquire('r', options as never));
    expect(error.field).toBe(field);
    expect(error.message).toContain(`did you mean \`${meant}\`?`);
  });

  it('every acquiring method checks the names', () => {
    const typo = { ttlMs: 1_000, fiar: true } as never;
    const work = () => 'never runs';
    const pool = locker.semaphore('pool', { permits: 2 });
    const doc = locker.readWriteLock('doc');
    for (const [call, method] of [
      [() => locker.tryAcquire('r', typo), 'tryAcquire'],
      [() => locker.withLock('r', typo, work), 'withLock'],
      [() => locker.acquireAll(['a', 'b'], typo), 'acquireAll'],
      [() => pool.acquire(typo), 'Semaphore.acquire'],
      [() => pool.tryAcquire(typo), 'Semaphore.tryAcquire'],
      [() => pool.withPermit(typo, work), 'Semaphore.withPermit'],
      [() => doc.read.acquire(typo), 'ReadWriteLock.read.acquire'],
      [() => doc.write.withLock(typo, work), 'ReadWriteLock.write.withLock'],
    ] as const) {
      const error = thrown(call);
      expect(error.field).toBe('fiar');
      expect(error.message).toContain(`not an option of ${method}; did you mean \`fair\`?`);
    }
  });

  it('an option the method sets itself may be given only with that value', () => {
    // tryAcquire makes one attempt: a waitMs would be silently ignored.
    const wait = thrown(() => locker.tryAcquire('r', { ttlMs: 1_000, waitMs: 5_000 } as never));
    expect(wait.field).toBe('waitMs');
    expect(wait.message).toContain('absent (tryAcquire always uses 0)');
    const extend = thrown(() => locker.withLock('r', { ttlMs: 1_000, autoExtend: false }, () => 0));
    expect(extend.field).toBe('autoExtend');
    expect(extend.message).toContain('absent (withLock always uses true)');
  });

  it('names the method as users call it, and never shows the value of an unknown option', () => {
    const pool = locker.semaphore('pool', { permits: 2 });
    const extend = thrown(() => pool.withPermit({ ttlMs: 1_000, autoExtend: false }, () => 0));
    expect(extend.message).toContain('absent (Semaphore.withPermit always uses true)');
    const secret = thrown(() => new Locker({ nodes: [NO_IO], password: 's3cret' } as never));
    expect(secret.field).toBe('password');
    expect(secret.message).not.toContain('s3cret');
    expect(secret.message).toContain('got a value of type string');
  });

  it('reads options a caller inherits from a prototype, as before', async () => {
    const none = { ...NO_IO, send: async () => Promise.reject(new Error('offline')) };
    const offline = new Locker({ nodes: [none] });
    const inherited = Object.create({ ttlMs: 1_000 }) as { ttlMs: number };
    await expect(offline.tryAcquire('r', inherited)).rejects.toMatchObject({ code: 'NO_QUORUM' });
  });

  it('a permit has no fencing option: the error says why, not "did you mean"', () => {
    const error = thrown(() =>
      locker.semaphore('pool', { permits: 2 }).acquire({ ttlMs: 1_000, fencing: true } as never),
    );
    expect(error.field).toBe('fencing');
    expect(error.message).toContain('a permit has no fencing token');
  });

  it('semaphore, schedule, tls and openTelemetry options', () => {
    const permits = thrown(() => locker.semaphore('pool', { permit: 2 } as never));
    expect([permits.field, permits.message]).toEqual([
      'permit',
      expect.stringContaining('did you mean `permits`?'),
    ]);
    const tick = thrown(() =>
      schedule(
        locker,
        'job',
        '* * * * *',
        { lockAtMostFor: 1_000, lockAtLeast: 10 } as never,
        () => 0,
      ),
    );
    expect([tick.field, tick.message]).toEqual([
      'lockAtLeast',
      expect.stringContaining('did you mean `lockAtLeastFor`?'),
    ]);
    const tls = thrown(
      () => new Locker({ nodes: ['rediss://127.0.0.1:1'], tls: { servrname: 'x' } as never }),
    );
    expect([tls.field, tls.message]).toEqual([
      'tls.servrname',
      expect.stringContaining('did you mean `tls.servername`?'),
    ]);
    const otel = thrown(() => openTelemetry({ tracer: {} } as never));
    expect([otel.field, otel.message]).toEqual([
      'tracer',
      expect.stringContaining('did you mean `tracerProvider`?'),
    ]);
  });

  it('the testing kit checks its option names too, before starting anything', async () => {
    expect(thrown(() => startRedis({ node: 3 } as never)).message).toContain(
      'did you mean `nodes`?',
    );
    await expect(RedisServer.start({ arg: ['--x'] } as never)).rejects.toMatchObject({
      field: 'arg',
      message: expect.stringContaining('did you mean `args`?'),
    });
    await expect(startRedisCluster({ master: 3 } as never)).rejects.toMatchObject({
      field: 'master',
    });
    await expect(startRedisSentinel({ sentinel: 3 } as never)).rejects.toMatchObject({
      field: 'sentinel',
    });
  });
});

describe('closestName', () => {
  const known = ['ttlMs', 'waitMs', 'signal', 'autoExtend', 'maxHoldMs', 'minHoldMs', 'fair'];

  it.each([
    ['ttl', 'ttlMs'],
    ['TTLMS', 'ttlMs'],
    ['singal', 'signal'],
    ['maxHold', 'maxHoldMs'],
    ['minhold', 'minHoldMs'],
    ['fare', 'fair'],
  ])('%s → %s', (typed, meant) => {
    expect(closestName(typed, known)).toBe(meant);
  });

  it.each([['color'], ['x'], ['priority'], ['tz'], ['ms']])('%s has no likely meaning', (typed) => {
    expect(closestName(typed, known)).toBeUndefined();
  });

  it('prefers a name that contains what was typed, or that it contains', () => {
    expect(closestName('keyprefix', ['prefix', 'nodes'])).toBe('prefix');
    expect(closestName('timeout', ['nodeTimeoutMs', 'tls'])).toBe('nodeTimeoutMs');
    // A part among the other call's names beats a near miss among this one's: ttl is no tls.
    expect(closestName('ttl', ['tls', 'nodes'], ['ttlMs'])).toBe('ttlMs');
  });

  it('a familiar name from another library is suggested only where it exists', () => {
    expect(closestName('retryCount', known)).toBe('waitMs');
    expect(closestName('retries', known)).toBe('waitMs');
    expect(closestName('timeout', known)).toBe('waitMs');
    expect(closestName('fence', ['fencing', 'fair'])).toBe('fencing');
    expect(closestName('retryCount', ['masters', 'args'])).toBeUndefined();
  });
});
