import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Locker, type NodeResult, NoQuorumError } from '../../src/index.js';
import { startRedis } from '../../src/testing/index.js';

describe('lock tokens never appear in errors or events', () => {
  it('are masked where Redis echoes them back (an unknown EVALSHA)', async () => {
    // A node where EVALSHA does not exist: Redis then echoes the command's arguments.
    await using redis = await startRedis({
      args: ['--rename-command', 'EVALSHA', 'evalsha-renamed'],
    });
    const [url] = redis.urls as [string];
    const admin = new Redis(url);
    const l = new Locker({ nodes: [url] });
    try {
      // A script's first call on a connection is an EVAL (which works here); later ones are
      // EVALSHA.
      await (await l.acquire('warm-up', { ttlMs: 10_000 })).release();
      await l.tryAcquire('warm-up-fenced', { ttlMs: 10_000, fencing: true });
      const released: NodeResult[] = [];
      l.events.on('released', ({ nodes }) => released.push(...nodes));
      const lock = await l.acquire('r', { ttlMs: 10_000 }); // a plain SET: no script
      const token = (await admin.get('distlock:{r}')) as string;
      await lock.release(); // the release script fails: EVALSHA is unknown
      const [result] = released;
      expect(result?.outcome).toBe('error');
      const message = result?.outcome === 'error' ? result.error.message : '';
      expect(message).toContain("unknown command 'EVALSHA'");
      // (Redis echoes only the first arguments: the release's keys come before its token.)
      expect(message).not.toContain(token);
      expect(inspect(result, { depth: 10 })).not.toContain(token); // message, stack, cause

      const error = await l.tryAcquire('f', { ttlMs: 10_000, fencing: true }).catch((e) => e);
      expect(error).toBeInstanceOf(NoQuorumError);
      expect((error as Error).message).toContain('<token>');
      const nodeError = ((error as Error).cause as AggregateError).errors[0] as Error;
      expect(nodeError.message).toContain('<token>');
      expect('command' in nodeError).toBe(false); // ioredis attaches the command, token and all
    } finally {
      admin.disconnect();
      await l.close();
    }
  });
});
