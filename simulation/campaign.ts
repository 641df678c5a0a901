/**
 * Elections in the workload: a client campaigns, leads for a while and resigns. A leadership
 * is trusted from the moment `campaign` resolved until its signal fires (it renews itself, as
 * an auto-extended lock does), its use ends or its locker closes; its term is its fence. So
 * the oracle's rules for a lock hold of it as they are: at most one leader whose signal has
 * not fired, and terms that strictly increase in the order leaders were elected.
 */
import type { Election } from '../src/index.js';
import type { Ask, Client, Journal } from './workload.js';
import { pause } from './workload.js';

/** The election every client of a schedule campaigns in. */
export const ELECTION = 'e0';

/** The shortest lease: above the per-node timeout and the drift allowance, with room to renew. */
const MIN_LEASE_MS = 150;

/** `client`'s handle on the election, with a lease of `ask.ttlMs` (at least the shortest). */
export function electionOf(client: Client, ask: Ask): Election {
  return client.locker.election(ELECTION, { leaseMs: Math.max(MIN_LEASE_MS, ask.ttlMs) });
}

/**
 * One campaign by `client`: waits up to `ask.waitMs`, leads for `useMs`, resigns. Records the
 * leadership as a holding of the election. Resolves false when the campaign failed.
 */
export async function leadOnce(
  client: Client,
  ask: Ask,
  useMs: number,
  journal: Journal,
): Promise<boolean> {
  const giveUp = new AbortController();
  const timer = setTimeout(() => giveUp.abort(), ask.waitMs);
  let leadership: Awaited<ReturnType<Election['campaign']>>;
  try {
    leadership = await electionOf(client, ask).campaign(`c${client.id}`, {
      signal: giveUp.signal,
    });
  } catch (error) {
    journal.note(`c${client.id} ${ELECTION} campaign failed ${(error as Error).name}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
  const from = performance.now();
  let lostAt = Number.POSITIVE_INFINITY;
  leadership.signal.addEventListener('abort', () => {
    lostAt = performance.now();
  });
  journal.note(`c${client.id} ${ELECTION} leads, term ${leadership.term}`);
  await pause(useMs);
  const to = Math.min(performance.now(), lostAt, client.closedAt);
  journal.holdings.push({
    client: client.id,
    resource: ELECTION,
    kind: 'lock',
    from,
    to,
    fence: leadership.term,
  });
  const resigned = await leadership.resign().then(
    () => 'resigned',
    (error: Error) => error.name,
  );
  journal.note(`c${client.id} ${ELECTION} ${resigned}`);
  return true;
}
