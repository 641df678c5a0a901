/**
 * Liveness once faults stop: every client that is still open acquires each thing the
 * workload used, one after the other, all clients at once, and each must be served within
 * a bound that follows from the fault model and the workload's limits.
 */
import { ELECTION, leadOnce } from './campaign.js';
import { MAX_CLIENT_PAUSE_MS, MAX_NODE_DOWN_MS, MAX_NODE_PAUSE_MS } from './faults.js';
import type { Random } from './random.js';
import { pause } from './virtual-time.js';
import {
  type Action,
  acquire,
  type Client,
  type Journal,
  MAX_TTL_MS,
  MAX_WAIT_MS,
  type Workload,
} from './workload.js';

/** The TTL and use of each liveness acquisition (ms). */
const TTL_MS = 200;
const HOLD_MS = 10;
/**
 * What one acquisition may cost the others in the calm: its hold and release, and a retry
 * that just missed the release (the engine's retry delay is at most 60 ms plus jitter here)
 * or a hand-over through the waiting line (ms).
 */
const PER_ACQUISITION_MS = 150;

/**
 * How long after faults stop every waiter is served, at the latest (ms): a client may still
 * be paused, a node paused, then down and restarted (it abstains for the restart grace, the
 * longest TTL); a hold or a place in a waiting line left by a client that stopped answering
 * lasts a TTL or a wait, plus however far back its node's clock was moved since. Then the
 * clients' acquisitions go one after another.
 */
export function livenessBoundMs(jumpedBackMs: number, acquisitions: number): number {
  const stalled = MAX_CLIENT_PAUSE_MS + MAX_NODE_PAUSE_MS + MAX_NODE_DOWN_MS + MAX_TTL_MS;
  const leftOver = Math.max(MAX_TTL_MS, MAX_WAIT_MS) + jumpedBackMs;
  return stalled + leftOver + acquisitions * PER_ACQUISITION_MS;
}

/** What each client acquires in the liveness phase. */
function targets(workload: Workload): { action: Action; resource: string }[] {
  return workload.actions.flatMap((action): { action: Action; resource: string }[] =>
    action === 'lock'
      ? workload.resources.map((resource) => ({ action, resource }))
      : [{ action, resource: action === 'lead' ? ELECTION : (workload.resources[0] as string) }],
  );
}

/**
 * Runs the liveness phase from now (faults have stopped). Returns how long the last waiter
 * took to be served (ms) and a violation per waiter not served within the bound.
 */
export async function serveEveryWaiter(
  clients: readonly Client[],
  workload: Workload,
  jumpedBackMs: number,
  random: Random,
  journal: Journal,
): Promise<{ boundMs: number; servedWithinMs: number; unserved: string[] }> {
  const quietAt = performance.now();
  const open = clients.filter((client) => client.closedAt === Number.POSITIVE_INFINITY);
  const boundMs = livenessBoundMs(jumpedBackMs, open.length * targets(workload).length);
  let servedWithinMs = 0;
  const unserved: string[] = [];
  journal.note(`calm: every waiter served within ${boundMs.toFixed(0)} ms`);
  await Promise.all(
    open.map(async (client) => {
      for (const { action, resource } of targets(workload)) {
        const waitMs = Math.max(0, quietAt + boundMs - performance.now());
        const ask = { action, resource, ttlMs: TTL_MS, waitMs, fair: random.chance(0.5) };
        if (action === 'lead') {
          // A campaign, a leadership of HOLD_MS and a resignation, recorded by leadOnce.
          const led = await leadOnce(client, ask, HOLD_MS, journal);
          if (led instanceof Error) unserved.push(notServed(client, action, resource, led));
          else servedWithinMs = Math.max(servedWithinMs, led.ledAt - quietAt);
          continue;
        }
        try {
          const { handle, held } = await acquire(client, workload, {
            ...ask,
            fencing: false,
            autoExtend: false,
          });
          const from = performance.now();
          servedWithinMs = Math.max(servedWithinMs, from - quietAt);
          const deadline = from + handle.remainingMs();
          await pause(HOLD_MS);
          const to = Math.min(performance.now(), deadline);
          for (const one of held) {
            journal.holdings.push({
              ...one,
              client: client.id,
              permits: workload.permits,
              from,
              to,
            });
          }
          await handle.release().catch(() => undefined);
        } catch (error) {
          unserved.push(notServed(client, action, resource, error as Error));
        }
      }
    }),
  );
  journal.note(`calm: served within ${servedWithinMs.toFixed(3)} ms`);
  return { boundMs, servedWithinMs, unserved };

  function notServed(client: Client, action: Action, resource: string, error: Error): string {
    const waited = (performance.now() - quietAt).toFixed(0);
    return `liveness: c${client.id} ${action} ${resource} not served ${waited} ms after faults stopped: ${error.message}`;
  }
}
