/**
 * The hand-off floor: the least work a fair hand-off can do on one node, in plain ioredis.
 * A waiter that finds the lock taken joins a line (a sorted set, by arrival); a release sets
 * the key to the first waiter's token and publishes on that waiter's process channel; the
 * woken waiter confirms with one round trip. No timeouts, deadlines, crash handling or
 * retries beyond a 250 ms poll: a reference row for what the protocol itself costs, as the
 * ioredis floor is for the uncontended cycle.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { ContenderSpec } from './contender-spec.js';

const TAKE = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not holder then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not first or first == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    redis.call('ZREM', KEYS[2], ARGV[1])
    redis.call('HDEL', KEYS[3], ARGV[1])
    return 1
  end
end
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
return 0`;

const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not first then
  redis.call('DEL', KEYS[1])
  return 1
end
local channel = redis.call('HGET', KEYS[3], first)
redis.call('ZREM', KEYS[2], first)
redis.call('HDEL', KEYS[3], first)
redis.call('SET', KEYS[1], first, 'PX', ARGV[2])
redis.call('PUBLISH', channel, first)
return 1`;

interface FloorCommands {
  floorTake(...args: (string | number)[]): Promise<number>;
  floorRelease(...args: (string | number)[]): Promise<number>;
}

let counter = 0;

export const handOffFloor: ContenderSpec = {
  name: 'ioredis hand-off floor',
  multiNode: false,
  singleNode: true,
  contentionOnly: true,
  make(clients) {
    const client = clients[0] as Redis & FloorCommands;
    client.defineCommand('floorTake', { numberOfKeys: 3, lua: TAKE });
    client.defineCommand('floorRelease', { numberOfKeys: 3, lua: RELEASE });
    const channel = `bench:wake:${process.pid}:${Math.random().toString(36).slice(2)}`;
    const wakers = new Map<string, () => void>();
    const subscriber = client.duplicate();
    subscriber.on('message', (_channel: string, token: string) => wakers.get(token)?.());
    const subscribed = subscriber.subscribe(channel);
    return {
      async acquire(key, ttlMs) {
        await subscribed;
        const token = `${process.pid}:${++counter}`;
        const ticket = Date.now() * 1_000 + (counter % 1_000);
        const line = [key, `${key}:line`, `${key}:wake`] as const;
        for (;;) {
          const woken = new Promise<void>((resolve) => wakers.set(token, resolve));
          if ((await client.floorTake(...line, token, ttlMs, ticket, channel)) === 1) break;
          await Promise.race([woken, sleep(250)]);
        }
        wakers.delete(token);
        return { release: () => client.floorRelease(...line, token, ttlMs) };
      },
      close: async () => {
        subscriber.disconnect();
      },
    };
  },
};
