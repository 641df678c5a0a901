/**
 * Requests that arrive late, on an old connection: an attempt's `SET` lands but its reply is
 * lost, its undo is held in a proxy whose client side is reset, the client reconnects and a
 * later attempt succeeds; then the held undo reaches the server. It must not take back what
 * the later attempt got, for any kind of hold: no second client may acquire meanwhile.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LockBusyError, type Locker } from '../../src/index.js';
import { FaultProxy } from '../../src/testing/index.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(1);
let proxy: FaultProxy;

beforeAll(async () => {
  proxy = await FaultProxy.start(fixture().redis.nodes[0]?.port as number);
});
beforeEach(() => proxy.set({ mode: 'pass' }));
afterAll(() => proxy.close());

const proxied = useLockers(fixture, () => [proxy.url]);
const direct = useLockers(fixture);

const NODE_TIMEOUT_MS = 200;
const TTL_MS = 10_000;

/** One kind of hold, taken on resource `r`, and how to see its key on the server. */
interface Primitive {
  readonly name: string;
  acquire(locker: Locker, waitMs: number): Promise<{ remainingMs(): number; release(): unknown }>;
  /** Whether the server holds `r` for the acquisition under test (fence counters aside). */
  held(): Promise<boolean>;
  /**
   * `r` is held by another for a moment first, so that the faults hit a later attempt of an
   * acquisition that waits (acquireAll waits in a single resource's line).
   */
  readonly busyFirst?: boolean;
  /** How a second client would take `r` from the holder: as `acquire` unless told. */
  rival?(locker: Locker): Promise<unknown>;
}

/** Polls `check` until it holds; within the acquisition's own 5 s wait. */
async function eventually(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 5_000;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`never happened: ${what}`);
    await delay(5);
  }
}

const admin = () => fixture().admin[0] as NonNullable<ReturnType<typeof fixture>['admin'][0]>;

const primitives: readonly Primitive[] = [
  {
    name: 'a lock',
    acquire: (l, waitMs) => l.acquire('r', { ttlMs: TTL_MS, waitMs }),
    held: async () => (await admin().exists('distlock:{r}')) === 1,
  },
  {
    name: 'a fenced lock',
    acquire: (l, waitMs) => l.acquire('r', { ttlMs: TTL_MS, waitMs, fencing: true }),
    held: async () => (await admin().exists('distlock:{r}')) === 1,
  },
  {
    name: 'a fair lock',
    acquire: (l, waitMs) => l.acquire('r', { ttlMs: TTL_MS, waitMs, fair: true }),
    held: async () => (await admin().exists('distlock:{r}')) === 1,
  },
  {
    name: 'a permit of a 1-permit semaphore',
    acquire: (l, waitMs) => l.semaphore('r', { permits: 1 }).acquire({ ttlMs: TTL_MS, waitMs }),
    held: async () => (await admin().zcard('distlock:{r}:permits')) > 0,
  },
  {
    name: 'a write lock',
    acquire: (l, waitMs) => l.readWriteLock('r').write.acquire({ ttlMs: TTL_MS, waitMs }),
    held: async () => (await admin().exists('distlock:{r}:rw:writer')) === 1,
  },
  {
    name: 'a read lock',
    acquire: (l, waitMs) => l.readWriteLock('r').read.acquire({ ttlMs: TTL_MS, waitMs }),
    held: async () => (await admin().zcard('distlock:{r}:rw:readers')) > 0,
    rival: (l) => l.readWriteLock('r').write.acquire({ ttlMs: TTL_MS, waitMs: 0 }),
  },
  {
    name: 'acquireAll',
    acquire: (l, waitMs) => l.acquireAll(['r'], { ttlMs: TTL_MS, waitMs }),
    held: async () => (await admin().pttl('distlock:{r}')) > TTL_MS / 2,
    busyFirst: true,
  },
];

describe('a request delivered late on an old connection', () => {
  for (const primitive of primitives) {
    it(`cannot undo a later attempt's grant: ${primitive.name}`, async () => {
      // A waiter in line polls every 0.625-1.875 s at this retryDelayMs (see `pollingMs`),
      // and a hand-over to it lasts its patience, 5 s: less than the confirmed 10 s lease.
      const retryDelayMs = primitive.busyFirst ? 1_000 : 50;
      const first = proxied({ nodeTimeoutMs: NODE_TIMEOUT_MS, retryDelayMs });
      await (await first.acquire('warm', { ttlMs: 1_000 })).release(); // connected, scripts loaded

      let acquiring: Promise<{ remainingMs(): number; release(): unknown }>;
      if (primitive.busyFirst) {
        const occupant = await direct().acquire('r', { ttlMs: TTL_MS });
        acquiring = primitive.acquire(first, 15_000);
        await eventually(async () => (await admin().exists('distlock:{r}:queue')) === 1, 'in line');
        // Past the locker's first retry, which comes within a node timeout of its first wait:
        // its next poll is 0.625 s away at least. The release then hands `r` over to the
        // waiter, whose wake-up and confirmation replies are held. A poll answered while the
        // replies are held would leave its node stalled: no request would follow it.
        await delay(2 * NODE_TIMEOUT_MS);
        proxy.set({ mode: 'hold', direction: 'replies' });
        await occupant.release();
      } else {
        proxy.set({ mode: 'hold', direction: 'replies' });
        acquiring = primitive.acquire(first, 5_000);
      }
      // An attempt reaches the server, but its reply does not come back.
      await eventually(() => primitive.held(), 'an attempt reached the server');
      // Its undo, sent once the attempt timed out, is held too, on the same connection.
      proxy.set({ mode: 'blackhole' });
      await eventually(() => proxy.held.requests > 0, "the attempt's undo was sent");
      // The client side is reset: the client reconnects and a later attempt gets the hold.
      const orphans = proxy.orphan();
      proxy.set({ mode: 'pass' });
      const holder = await acquiring;
      expect(holder.remainingMs()).toBeGreaterThan(TTL_MS / 2);

      // Now the orphaned undo reaches the server.
      orphans.deliver();
      await delay(100);
      expect(await primitive.held()).toBe(true);
      const second = direct({ nodeTimeoutMs: 1_000 });
      const rival = await (primitive.rival?.(second) ?? primitive.acquire(second, 0)).catch(
        (error: unknown) => error,
      );
      expect(rival).toBeInstanceOf(LockBusyError);
      await holder.release();
    });
  }
});
