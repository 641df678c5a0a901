// Runnable: `npm run build && npx vitest run --config examples/unit-tests/vitest.config.mjs`
// (with fengari installed: InMemoryRedis runs distlock's Lua scripts in it). No Redis server
// is needed.
import { Locker, LockLostError } from 'distlock';
import { InMemoryRedis } from 'distlock/testing';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { issueInvoice } from './invoice.mjs';

let redis;
let locker;
beforeEach(() => {
  redis = new InMemoryRedis();
  locker = new Locker({ nodes: [redis] });
});
afterEach(async () => {
  vi.useRealTimers();
  await locker.close();
});

it('issues an invoice once when two workers ask at the same time', async () => {
  const invoices = new Map();
  const render = async (id) => `pdf of ${id}`;
  const results = await Promise.all([
    issueInvoice(locker, invoices, 42, render),
    issueInvoice(locker, invoices, 42, render),
  ]);
  expect(results.sort()).toEqual(['busy', 'issued']);
  expect(await issueInvoice(locker, invoices, 42, render)).toBe('already issued');
});

it('stores nothing when Redis stops answering while it renders', async () => {
  vi.useFakeTimers(); // fakes timers, Date and performance: the locker's clock too
  const invoices = new Map();
  const render = (id, signal) =>
    new Promise((resolve, reject) => {
      const done = setTimeout(() => resolve(`pdf of ${id}`), 60_000);
      signal.addEventListener('abort', () => {
        clearTimeout(done);
        reject(signal.reason);
      });
    });
  const issuing = issueInvoice(locker, invoices, 7, render);
  const outcome = expect(issuing).rejects.toBeInstanceOf(LockLostError);
  await vi.advanceTimersByTimeAsync(10_000); // auto-extended past its 5 s TTL
  redis.pause(); // extensions get no answer from now on
  await vi.advanceTimersByTimeAsync(5_000); // the lease runs out: the signal fires
  await outcome;
  expect(invoices.size).toBe(0);
});
