/**
 * distlock/nestjs in a Nest application context (@nestjs/testing) on real Redis: the module's
 * Locker, its close with the application, and the @Locked decorator. The decorators are
 * applied as functions here (this suite is compiled without `experimentalDecorators`);
 * fleet.test.ts runs an application compiled as Nest's CLI sets one up.
 */
import 'reflect-metadata';
import { Inject, Injectable, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, Locker, LockerClosedError } from '../../src/index.js';
import { DistlockModule, heldLock, Locked, OncePerTick } from '../../src/nestjs/index.js';
import { useRedis } from '../support/redis.js';

const fixture = useRedis(1);

/** Applies a method decorator as TypeScript's `experimentalDecorators` would. */
function decorate(type: { prototype: object }, method: string, decorator: MethodDecorator): void {
  const descriptor = Object.getOwnPropertyDescriptor(type.prototype, method) as PropertyDescriptor;
  const result = decorator(type.prototype, method, descriptor) ?? descriptor;
  Object.defineProperty(type.prototype, method, result);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class Orders {
  readonly log: string[] = [];

  async ship(id: string, ms: number): Promise<string> {
    this.log.push(`start ${id}`);
    await pause(ms);
    this.log.push(`end ${id}`);
    return `shipped ${id}`;
  }

  async bill(): Promise<bigint | undefined> {
    return heldLock().fence;
  }

  async report(): Promise<string> {
    await pause(200);
    return 'reported';
  }
}
decorate(
  Orders,
  'ship',
  Locked((id: string) => `order:${id}`, { ttlMs: 5_000 }),
);
decorate(Orders, 'bill', Locked('billing', { ttlMs: 5_000, fencing: true }));
decorate(Orders, 'report', Locked('report', { ttlMs: 5_000, onBusy: 'skip' }));
Injectable()(Orders);

/** A subclass, made for each consumer (transient): it gets the locker too. */
class OneOffOrders extends Orders {}
Injectable({ scope: Scope.TRANSIENT })(OneOffOrders);

/** Closes "its client" when the application shuts down, after the locker closed. */
class ClientOwner {
  lockerOpenAtShutdown: boolean | undefined;

  constructor(readonly locker: Locker) {}

  async onApplicationShutdown(): Promise<void> {
    const probe = await this.locker.tryAcquire('probe', { ttlMs: 1_000 }).catch((e) => e);
    this.lockerOpenAtShutdown = !(probe instanceof LockerClosedError);
  }
}
Injectable()(ClientOwner);
Inject(Locker)(ClientOwner, undefined, 0);

async function application(nodes = fixture().redis.urls) {
  const app = await Test.createTestingModule({
    imports: [DistlockModule.forRoot({ nodes: [...nodes] })],
    providers: [Orders, OneOffOrders, ClientOwner],
  }).compile();
  await app.init();
  return app;
}

describe('DistlockModule', () => {
  it('provides one Locker on the nodes given, closed with the application', async () => {
    const app = await application();
    const locker = app.get(Locker);
    expect(locker).toBeInstanceOf(Locker);
    const lock = await locker.acquire('module', { ttlMs: 5_000 });
    expect(await fixture().admin[0]?.exists('distlock:{module}')).toBe(1);
    await app.close();
    await expect(locker.acquire('module', { ttlMs: 5_000 })).rejects.toBeInstanceOf(
      LockerClosedError,
    );
    expect(lock.signal.aborted).toBe(true); // the close released it: its work must stop
    expect(await fixture().admin[0]?.exists('distlock:{module}')).toBe(0);
    // Closed before the modules' own shutdown hooks, which may close clients it uses.
    expect(app.get(ClientOwner).lockerOpenAtShutdown).toBe(false);
  });

  it('makes the locker from a factory with forRootAsync', async () => {
    const app = await Test.createTestingModule({
      imports: [
        DistlockModule.forRootAsync({
          useFactory: async () => ({ nodes: [...fixture().redis.urls], prefix: 'async:' }),
        }),
      ],
    }).compile();
    await app.init();
    const lock = await app.get(Locker).acquire('x', { ttlMs: 5_000 });
    expect(await fixture().admin[0]?.exists('async:{x}')).toBe(1);
    await lock.release();
    await app.close();
  });
});

describe('@Locked', () => {
  it('runs calls on one resource one at a time, and on others at once', async () => {
    const app = await application();
    const orders = app.get(Orders);
    const results = await Promise.all([
      orders.ship('a', 100),
      orders.ship('a', 100),
      orders.ship('b', 50),
    ]);
    expect(results).toEqual(['shipped a', 'shipped a', 'shipped b']);
    const a = orders.log.filter((line) => line.endsWith(' a'));
    expect(a).toEqual(['start a', 'end a', 'start a', 'end a']);
    expect(orders.log.indexOf('start b')).toBeLessThan(orders.log.indexOf('end a'));
    expect(await fixture().admin[0]?.exists('distlock:{order:a}')).toBe(0); // released
    await app.close();
  });

  it('gives the method its lock: the fence, when asked for', async () => {
    const app = await application();
    const orders = app.get(Orders);
    const first = await orders.bill();
    const second = await orders.bill();
    expect(typeof first).toBe('bigint');
    expect(second).toBeGreaterThan(first as bigint);
    await app.close();
  });

  it("skips the call when busy with onBusy: 'skip'", async () => {
    const app = await application();
    const orders = app.get(Orders);
    const [first, second] = await Promise.all([
      orders.report(),
      pause(50).then(() => orders.report()),
    ]);
    expect([first, second]).toEqual(['reported', undefined]);
    await app.close();
  });

  it("works in a transient subclass, and lets the method's own error win", async () => {
    const app = await application();
    const orders = await app.resolve(OneOffOrders);
    expect(await orders.ship('d', 0)).toBe('shipped d');
    const failing = Object.assign(orders, {
      log: {
        push: () => {
          throw new Error('the method failed');
        },
      },
    });
    await expect(failing.ship('e', 0)).rejects.toThrow('the method failed');
    expect(await fixture().admin[0]?.exists('distlock:{order:e}')).toBe(0); // released anyway
    await app.close();
  });

  it('names the module when called on an instance no application gave a locker', async () => {
    await expect(new Orders().ship('c', 0)).rejects.toThrow(
      /@Locked\(\) on Orders\.ship: no locker\. Import DistlockModule\.forRoot/,
    );
  });

  it('rejects bad options when the class is defined, naming the field', () => {
    expect(() => Locked('', { ttlMs: 5_000 })).toThrow(InvalidArgumentError);
    expect(() => Locked('x', { ttlMs: -1 })).toThrow(expect.objectContaining({ field: 'ttlMs' }));
    expect(() => Locked('x', { ttlMs: 1_000, onBusy: 'never' as never })).toThrow(
      expect.objectContaining({ field: 'onBusy' }),
    );
    expect(() => OncePerTick('job', { lockAtMostFor: 1_000, lockAtLeastFor: 2_000 })).toThrow(
      expect.objectContaining({ field: 'lockAtLeastFor' }),
    );
    expect(() => Locked('x', { ttlMs: 1_000, onBusy: 'skip', waitMs: 500 })).toThrow(
      expect.objectContaining({ field: 'waitMs' }),
    );
    expect(() => Locked('x', { ttlMs: 1_000, ttl: 5 } as never)).toThrow(
      expect.objectContaining({ field: 'ttl' }),
    );
    class Static {
      ready = true;
      static async run(): Promise<void> {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(Static, 'run') as PropertyDescriptor;
    expect(() => Locked('x', { ttlMs: 1_000 })(Static, 'run', descriptor)).toThrow(
      /a static method/,
    );
  });
});
