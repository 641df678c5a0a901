import type { Socket } from 'node:net';
import { Redis as IORedis5 } from 'ioredis';
import { Redis as IORedis6 } from 'ioredis6';
import { Redis as IOValkey } from 'iovalkey';
import { describe, expect, it } from 'vitest';
import { IORedisConnection, type IORedisLike } from '../../src/driver/ioredis.js';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(1);

/** The chunks of each write the client's socket makes from now on. */
function watchWrites(client: IORedisLike): number[] {
  const stream = client.stream as Socket & {
    _write: (chunk: unknown, encoding: unknown, done: () => void) => void;
    _writev: (chunks: unknown[], done: () => void) => void;
  };
  const writes: number[] = [];
  const write = stream._write.bind(stream);
  const writev = stream._writev.bind(stream);
  stream._write = (chunk, encoding, done) => {
    writes.push(1);
    write(chunk, encoding, done);
  };
  stream._writev = (chunks, done) => {
    writes.push(chunks.length);
    writev(chunks, done);
  };
  return writes;
}

describe('commands sent in one tick leave in few writes', () => {
  const clients: [string, (url: string) => IORedisLike][] = [
    ['ioredis 5', (url) => new IORedis5(url)],
    ['ioredis 6', (url) => new IORedis6(url) as unknown as IORedisLike],
    ['iovalkey', (url) => new IOValkey(url) as unknown as IORedisLike],
  ];
  for (const [name, open] of clients) {
    it(name, async () => {
      const client = open(fixture().redis.urls[0] as string);
      const node = new IORedisConnection(client);
      await node.send('PING', [], 1_000); // connected
      const writes = watchWrites(client);
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => node.send('SET', [`batch:${i}`, i], 1_000)),
      );
      expect(replies).toEqual(Array(20).fill('OK'));
      // Without batching: twenty writes, one per command (one system call each). The first
      // two leave at once (fewer than two were in flight); the others wait for the end of
      // the tick.
      expect(writes).toEqual([1, 1, 18]);
      // A command alone is not held back for company: it leaves at once, uncorked.
      const stream = client.stream as Socket;
      const reply = node.send('GET', ['batch:7'], 1_000);
      expect(stream.writableCorked).toBe(0);
      expect(await reply).toBe('7');
      expect(writes).toEqual([1, 1, 18, 1]);
      // Nor is one sent while a single other command is in flight (one lock at a time on N
      // nodes, a slower node's reply to the last round still on its way).
      const first = node.send('GET', ['batch:1'], 1_000);
      const second = node.send('GET', ['batch:2'], 1_000);
      expect(stream.writableCorked).toBe(0);
      expect(await Promise.all([first, second])).toEqual(['1', '2']);
      expect(writes).toEqual([1, 1, 18, 1, 1, 1]);
      // A long batch leaves every 32 commands, the rest at the end of the tick.
      writes.length = 0;
      const many = await Promise.all(
        Array.from({ length: 80 }, (_, i) => node.send('GET', [`batch:${i % 20}`], 1_000)),
      );
      expect(many).toEqual(Array.from({ length: 80 }, (_, i) => String(i % 20)));
      expect(writes).toEqual([1, 1, 32, 32, 14]);
      client.disconnect();
    });
  }
});
