/**
 * Elections in the workload: a client campaigns, leads for a while and resigns. A leadership
 * is trusted from the moment `campaign` resolved until its signal fires (it renews itself, as
 * an auto-extended lock does), its use ends or its locker closes; its term is its fence. So
 * the oracle's rules for a lock hold of it as they are: at most one leader whose signal has
 * not fired, and terms that strictly increase in the order leaders were elected. Before it
 * campaigns and after it resigned, the client reads the leader (leader-reads.ts).
 */
import type { Election, Leadership } from '../src/index.js';
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
 * Each client still open and not cut off reads the leader once, all at once; resolves their
 * reads (a read that fails is only noted). For the calm's check that no leader is named once
 * none stands.
 */
async function calmLeaderReads(
  clients: readonly Client[],
  time: Pick<VirtualTime, 'run' | 'now'>,
  journal: Journal,
): Promise<LeaderRead[]> {
  const open = clients.filter(
    (client) =>
      client.closedAt === Number.POSITIVE_INFINITY && client.process.cutOffUntil <= time.now(),
  );
  const calm: Journal = { ...journal, leaderReads: [] }; // its own reads, the same log
  const election = (client: Client) => client.locker.election(ELECTION, { leaseMs: MIN_LEASE_MS });
  await settledWithin(time, Promise.all(open.map((c) => readLeader(c, election(c), calm))));
  return calm.leaderReads;
}

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
 * The calm's check of `leader()`: one client campaigns and, once it leads, is cut off from
 * every node (a partition: nothing it sends arrives, nothing it is sent reaches it) until the
 * other clients have read the leader, once every lock key set before (its lease's too) is
 * surely gone (`keysGoneAt`, then a lease of at most `maxTtlMs` by a node clock that may run
 * slow). Its lease runs out unrenewed and unreleased meanwhile: only the read script's check
 * of the lease keeps those reads from naming it (its release, queued behind the cut-off,
 * would also mark its record ended). Then it resigns. Resolves with the reads and when they
 * could begin; with no reads when the campaign failed.
 */
export async function calmAfterLapsedLeadership(
  clients: readonly Client[],
  time: Pick<VirtualTime, 'run' | 'now'>,
  keysGoneAt: () => number,
  maxTtlMs: number,
  journal: Journal,
): Promise<{ reads: LeaderRead[]; goneAt: number }> {
  const client = clients.find((one) => one.closedAt === Number.POSITIVE_INFINITY);
  const led = client && (await campaignInCalm(client, time, journal));
  if (!client || !led) {
    const goneAt = keysGoneAt() + maxTtlMs;
    await time.run(() => false, goneAt);
    return { reads: await calmLeaderReads(clients, time, journal), goneAt };
  }
  journal.note(`c${client.id} ${ELECTION} leads in the calm, term ${led.term}, and is cut off`);
  // Every key set so far: nothing this client sends from now on arrives before the reads.
  const goneAt = keysGoneAt() + maxTtlMs;
  const cutOffUntil = goneAt + 2 * CALM_STEP_MS;
  client.process.pausedUntil = cutOffUntil;
  client.process.cutOffUntil = cutOffUntil;
  await time.run(() => false, goneAt);
  const reads = await calmLeaderReads(clients, time, journal);
  await time.run(() => false, cutOffUntil);
  const resigned = await settledWithin(time, led.resign());
  const outcome = resigned instanceof Error ? resigned.name : (resigned ?? 'no answer');
  journal.note(`c${client.id} ${ELECTION} resigned after its lease: ${outcome}`);
  return { reads, goneAt };
}

/** A campaign of the calm's leader, given a calm step: its leadership, or nothing. */
async function campaignInCalm(
  client: Client,
  time: Pick<VirtualTime, 'run' | 'now'>,
  journal: Journal,
): Promise<Leadership | undefined> {
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
    return undefined;
  }
  return led;
}
