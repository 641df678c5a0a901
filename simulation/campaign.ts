/**
 * Elections in the workload: a client campaigns, leads for a while and resigns. A leadership
 * is trusted from the moment `campaign` resolved until its signal fires (it renews itself, as
 * an auto-extended lock does), its use ends or its locker closes; its term is its fence. So
 * the oracle's rules for a lock hold of it as they are: at most one leader whose signal has
 * not fired, and terms that strictly increase in the order leaders were elected. Before it
 * campaigns and after it resigned, the client reads the leader (leader-reads.ts).
 */
import type { Election } from '../src/index.js';
import type { LeaderRead, Term } from './leader-reads.js';
import { pause, type VirtualTime } from './virtual-time.js';
import type { Ask, Client, Journal } from './workload.js';

/** The election every client of a schedule campaigns in. */
export const ELECTION = 'e0';

/** The shortest lease: above the per-node timeout and the drift allowance, with room to renew. */
const MIN_LEASE_MS = 150;

/**
 * One campaign by `client`, with a lease of `ask.ttlMs` (at least the shortest): waits up to
 * `ask.waitMs`, leads for `useMs`, resigns. Records the leadership as a holding of the
 * election. Resolves when it began to lead, or with why the campaign failed.
 */
export async function leadOnce(
  client: Client,
  ask: Pick<Ask, 'ttlMs' | 'waitMs'>,
  useMs: number,
  journal: Journal,
): Promise<{ ledAt: number } | Error> {
  const leaseMs = Math.max(MIN_LEASE_MS, ask.ttlMs);
  const election = client.locker.election(ELECTION, { leaseMs });
  await readLeader(client, election, journal);
  const giveUp = new AbortController();
  const timer = setTimeout(() => giveUp.abort(), ask.waitMs);
  let leadership: Awaited<ReturnType<Election['campaign']>>;
  try {
    leadership = await election.campaign(`c${client.id}`, {
      signal: giveUp.signal,
    });
  } catch (error) {
    journal.note(`c${client.id} ${ELECTION} campaign failed ${(error as Error).name}`);
    return error as Error;
  } finally {
    clearTimeout(timer);
  }
  const from = performance.now();
  let lostAt = Number.POSITIVE_INFINITY;
  leadership.signal.addEventListener('abort', () => {
    lostAt = performance.now();
  });
  journal.note(`c${client.id} ${ELECTION} leads, term ${leadership.term}`);
  const term: Term = { term: leadership.term, value: leadership.value };
  journal.terms.push(term);
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
  const resigned = await leadership.resign().catch((error: Error) => error.name);
  if (resigned === 'released') term.resignedAt = performance.now();
  journal.note(`c${client.id} ${ELECTION} resigned: ${resigned}`);
  await readLeader(client, election, journal);
  return { ledAt: from };
}

/** Reads the leader of `election` for the oracle; a read that fails is only noted. */
async function readLeader(client: Client, election: Election, journal: Journal): Promise<void> {
  const from = performance.now();
  try {
    const leader = await election.leader();
    journal.leaderReads.push({ client: client.id, from, to: performance.now(), leader });
    journal.note(`c${client.id} ${ELECTION} reads ${leader ? `term ${leader.term}` : 'no leader'}`);
  } catch (error) {
    journal.note(`c${client.id} ${ELECTION} read failed ${(error as Error).name}`);
  }
}

/**
 * Each client still open reads the leader once, all at once; resolves their reads (a read that
 * fails is only noted). For the calm's check that no leader is named once none stands.
 */
export async function calmLeaderReads(
  clients: readonly Client[],
  time: Pick<VirtualTime, 'run' | 'now'>,
  journal: Journal,
): Promise<LeaderRead[]> {
  const open = clients.filter((client) => client.closedAt === Number.POSITIVE_INFINITY);
  const calm: Journal = { ...journal, leaderReads: [] }; // its own reads, the same log
  const election = (client: Client) => client.locker.election(ELECTION, { leaseMs: MIN_LEASE_MS });
  await settledWithin(time, Promise.all(open.map((c) => readLeader(c, election(c), calm))));
  return calm.leaderReads;
}

/** How many leases the calm's leader stays cut off: past its lease on a slow node clock. */
const CUT_OFF_LEASES = 3;

/** Virtual time the calm's steps may take (ms): far more than a request's per-node timeouts. */
const CALM_STEP_MS = 10_000;

/** Runs virtual time until `promise` settles, at most a calm step: its value, error or nothing. */
async function settledWithin<T>(
  time: Pick<VirtualTime, 'run' | 'now'>,
  promise: Promise<T>,
): Promise<T | Error | undefined> {
  let outcome: { readonly value: T | Error } | undefined;
  void promise.then(
    (value) => {
      outcome = { value };
    },
    (error: Error) => {
      outcome = { value: error };
    },
  );
  await time.run(() => outcome !== undefined, time.now() + CALM_STEP_MS);
  return outcome?.value;
}

/**
 * The calm's leader that is cut off: the first client still open campaigns, then is cut off
 * from every node (nothing it sends arrives, nothing is answered) for longer than its lease.
 * Its leadership gives up at its renew deadline, and its renewals and release arrive once the
 * lease is over on every node: nothing is released, so nothing is marked ended, and it
 * resigns after that, as late. Its leader record stays: only the read script's check of the
 * lease tells that the term is over. Resolves once it resigned (or could not campaign).
 */
export async function lapsedLeadership(
  clients: readonly Client[],
  time: Pick<VirtualTime, 'run' | 'now'>,
  keysGoneAt: () => number,
  journal: Journal,
): Promise<void> {
  const client = clients.find((one) => one.closedAt === Number.POSITIVE_INFINITY);
  if (!client) return;
  const election = client.locker.election(ELECTION, { leaseMs: MIN_LEASE_MS });
  const giveUp = new AbortController(); // on the virtual clock, unlike AbortSignal.timeout
  const timer = setTimeout(() => giveUp.abort(), CALM_STEP_MS);
  const led = await settledWithin(
    time,
    election.campaign(`c${client.id}`, { signal: giveUp.signal }),
  );
  clearTimeout(timer);
  if (led === undefined || led instanceof Error) {
    journal.note(`c${client.id} ${ELECTION} calm campaign failed ${led?.name ?? 'timeout'}`);
    return;
  }
  journal.note(`c${client.id} ${ELECTION} leads in the calm, term ${led.term}, and is cut off`);
  const cutOffUntil = time.now() + CUT_OFF_LEASES * MIN_LEASE_MS;
  client.process.pausedUntil = cutOffUntil;
  client.process.cutOffUntil = cutOffUntil;
  await time.run(() => led.signal.aborted, time.now() + CALM_STEP_MS);
  // Its last renewal landed at the latest as its answer did; the lease lasts from there.
  await time.run(() => false, keysGoneAt() + 2 * MIN_LEASE_MS);
  const resigned = await settledWithin(time, led.resign());
  const outcome = resigned instanceof Error ? resigned.name : (resigned ?? 'no answer');
  journal.note(`c${client.id} ${ELECTION} resigned after its lease: ${outcome}`);
}
