// Runnable: `npm run build && node --test examples/unit-tests/invoice.node-test.mjs` (with
// fengari and @sinonjs/fake-timers installed). No Redis server is needed. node:test's own
// mock timers leave `performance.now()` alone, which a locker's deadlines follow; the
// library they come from fakes it too.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, it } from 'node:test';
import FakeTimers from '@sinonjs/fake-timers';
import { Locker, LockLostError } from 'distlock';
import { InMemoryRedis } from 'distlock/testing';
import { issueInvoice } from './invoice.mjs';

let redis;
let locker;
let clock;
beforeEach(() => {
  redis = new InMemoryRedis();
  locker = new Locker({ nodes: [redis] });
});
afterEach(async () => {
  clock?.uninstall();
  clock = undefined;
  await locker.close();
});

it('issues an invoice once when two workers ask at the same time', async () => {
  const invoices = new Map();
  const render = async (id) => `pdf of ${id}`;
  const results = await Promise.all([
    issueInvoice(locker, invoices, 42, render),
    issueInvoice(locker, invoices, 42, render),
  ]);
  assert.deepEqual(results.sort(), ['busy', 'issued']);
  assert.equal(await issueInvoice(locker, invoices, 42, render), 'already issued');
});

it('stores nothing when Redis stops answering while it renders', async () => {
  clock = FakeTimers.install(); // timers, Date and performance
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
  const outcome = assert.rejects(issuing, LockLostError);
  await clock.tickAsync(10_000); // auto-extended past its 5 s TTL
  redis.pause(); // extensions get no answer from now on
  await clock.tickAsync(5_000); // the lease runs out: the signal fires
  await outcome;
  assert.equal(invoices.size, 0);
});
