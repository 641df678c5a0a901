// A service function that takes a lock, as an application would write it; its unit tests,
// which need no Redis, are invoice.test.mjs (vitest) and invoice.node-test.mjs (node:test).
import { LockBusyError } from 'distlock';

/**
 * Issues the invoice of `orderId` once, however many workers call this at the same time:
 * 'issued', 'already issued', or 'busy' when another worker is issuing it right now.
 * `render` takes long, and stops when the lock is lost (its signal aborts): an invoice
 * rendered without the lock is never stored.
 */
export async function issueInvoice(locker, invoices, orderId, render) {
  try {
    return await locker.withLock(
      `invoice:${orderId}`,
      { ttlMs: 5_000, waitMs: 0 },
      async (signal) => {
        if (invoices.has(orderId)) return 'already issued';
        const pdf = await render(orderId, signal);
        signal.throwIfAborted();
        invoices.set(orderId, pdf);
        return 'issued';
      },
    );
  } catch (error) {
    if (error instanceof LockBusyError) return 'busy';
    throw error;
  }
}
