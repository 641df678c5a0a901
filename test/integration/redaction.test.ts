import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Locker,
  type LockerEvents,
  LockLostError,
  type NodeResult,
  NoQuorumError,
} from '../../src/index.js';
import { releaseScript } from '../../src/kinds/mutex/lua/release.js';
import { type RedisNodes, startRedis } from '../../src/testing/index.js';

/**
 * Lock tokens never reach errors or events, by either of the two ways a node's refusal can
 * carry them: the client attaches the command it sent (ioredis does, with every argument),
 * or Redis echoes the arguments in its reply. Each test below has only one of the two, so
 * that each guard is checked on its own.
 */
const EVENTS: readonly (keyof LockerEvents)[] = [
  'acquired',
  'retry',
  'extended',
  'released',
  'lost',
  'forceReleased',
  'warning',
];

/** Every event payload `locker` reports from now on. */
function recordEvents(locker: Locker): unknown[] {
  const payloads: unknown[] = [];
  for (const name of EVENTS) locker.events.on(name, (payload: unknown) => payloads.push(payload));
  return payloads;
}

/**
 * Where in `value` a string holds one of `secrets`, or a `command` is attached: paths
 * through every own property (enumerable or not: `NoQuorumError.nodes`), causes and
 * aggregated errors, message and stack included.
 */
function leaks(value: unknown, secrets: readonly string[]): string[] {
  const found: string[] = [];
  const seen = new Set<object>();
  const visit = (v: unknown, path: string): void => {
    if (typeof v === 'string') {
      if (secrets.some((secret) => v.includes(secret))) found.push(path);
      return;
    }
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    const names = new Set(Object.getOwnPropertyNames(v));
    if (v instanceof Error) for (const name of ['message', 'stack', 'cause']) names.add(name);
    for (const name of names) {
      if (name === 'command') found.push(`${path}.command`);
      visit((v as Record<string, unknown>)[name], `${path}.${name}`);
    }
  };
  visit(value, '');
  return found;
}

describe('lock tokens never appear in errors or events', () => {
  let redis: RedisNodes;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.urls[0] as string);
  });
  afterAll(async () => {
    admin?.disconnect();
    await redis?.stop();
  });

  it.each([
    ['+evalsha', 'evalsha', 'EVALSHA'],
    ['+eval', 'eval', 'EVAL'],
  ])(
    'nor command arguments, when a user without %s releases (the client attaches the command)',
    async (_, command, refused) => {
      const user = ['ACL', 'SETUSER', 'holder', 'reset', 'on', '>pw', '~*', '&*', '+@all'];
      await admin.call(...(user as [string, ...string[]]));
      const url = `redis://holder:pw@127.0.0.1:${redis.nodes[0]?.port}`;
      const locker = new Locker({ nodes: [url] });
      const events = recordEvents(locker);
      try {
        if (refused === 'EVALSHA') {
          // A script's first call on a connection is an EVAL; the release below is then an
          // EVALSHA.
          await (await locker.acquire('warm-up', { ttlMs: 10_000 })).release();
        }
        const resource = `r-${command}`; // the key stays: the release fails
        const lock = await locker.acquire(resource, { ttlMs: 10_000 });
        const token = ((await admin.get(`distlock:{${resource}}`)) as string).split(
          ':',
        )[0] as string;
        // The permission is taken away while the lock is held (an ACL change applies to
        // connections already open).
        await admin.call(...(user as [string, ...string[]]), `-${command}`);
        // The refusal, as the client hands it over, carries every argument: the token too.
        const client = new Redis(url);
        const raw = await client.call(refused, 'x', '1', 'k', token).catch((e) => e);
        client.disconnect();
        expect((raw as { command?: { args: string[] } }).command?.args).toContain(token);
        expect((raw as Error).message).not.toContain(token); // no echo: only `command` has it

        const error = await lock.release().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(NoQuorumError);
        expect((error as Error).message).toContain(`run the '${command}' command`);
        const released = events.find(
          (e) => (e as { resource?: string }).resource === resource && 'result' in (e as object),
        ) as LockerEvents['released'][0];
        const [result] = released.nodes as [NodeResult];
        expect(result.outcome).toBe('error');
        const nodeError = ((error as Error).cause as AggregateError).errors[0];
        // The token, and the arguments it travelled with: the script's sha1 or its source.
        const secrets = [token, releaseScript.sha1, releaseScript.lua.slice(0, 40)];
        expect(leaks({ error, nodeError, result, events }, secrets)).toEqual([]);
        expect(inspect({ error, events }, { depth: 20, showHidden: true })).not.toContain(token);
      } finally {
        await locker.close();
      }
    },
  );

  it('are masked where Redis echoes them back (an unknown EVALSHA, a client attaching nothing)', async () => {
    await using renamed = await startRedis({
      args: ['--rename-command', 'EVALSHA', 'evalsha-renamed'],
    });
    const [url] = renamed.urls as [string];
    const nodeRedis = await createClient({ url }).connect();
    const echo = await nodeRedis
      .sendCommand(['EVALSHA', 'x', '1', 'k', 'AbCdEfGhIjKlMnOpQrStUv'])
      .catch((e) => e);
    // The reply echoes the arguments, token included, and node-redis attaches no command.
    expect((echo as Error).message).toContain("'AbCdEfGhIjKlMnOpQrStUv'");
    expect('command' in (echo as Error)).toBe(false);
    const owner = new Redis(url);
    const l = new Locker({ nodes: [nodeRedis] });
    try {
      // A script's first call on a connection is an EVAL (which works here); later ones are
      // EVALSHA.
      const warmUp = await l.acquire('warm-up', { ttlMs: 10_000 });
      await warmUp.extend();
      await warmUp.release();
      const lock = await l.acquire('r', { ttlMs: 10_000 }); // a plain SET: no script
      // The random token, before the owner label that follows it (`<token>.<since>.<owner>`).
      const token = ((await owner.get('distlock:{r}')) as string).split(/[.:]/)[0] as string;
      expect(token).toMatch(/^[\w-]{22}$/);
      // The extension's EVALSHA is unknown; Redis echoes its key, then the token.
      const error = await lock.extend().catch((e) => e);
      expect(error).toBeInstanceOf(LockLostError);
      const [result] = (error as LockLostError).nodes;
      expect(result?.outcome).toBe('error');
      const message = result?.outcome === 'error' ? result.error.message : '';
      // The owner label stays: it is no secret, and tells whose hold it was.
      expect(message).toMatch(
        /^ERR unknown command 'EVALSHA', .*'distlock:\{r\}' '<token>\.\d+\.[^']*'/,
      );
      expect((error as Error).message).toContain("'<token>.");
      expect(leaks(error, [token])).toEqual([]);
      expect(inspect(error, { depth: 20, showHidden: true })).not.toContain(token);
      await lock.release();
    } finally {
      owner.disconnect();
      await l.close();
      await nodeRedis.quit();
    }
  });
});
