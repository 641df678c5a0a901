/**
 * What the simulated clients do: acquire (a lock, plain, fair or fenced; several locks with
 * `acquireAll`; a permit; a read or write lock), use it for a while, maybe extending it by
 * hand or letting it extend itself, maybe writing to the fenced store, and release it. Each
 * holding is recorded as its client computed it, for the oracle.
 */
import {
  fencedWrite,
  type Lock,
  type MultiLock,
  type ReadWriteLock,
  type Semaphore,
} from '../src/index.js';
import { leadOnce } from './campaign.js';
import type { SimConnection } from './connection.js';
import type { FaultTargets } from './faults.js';
import { storeKey } from './fenced-store.js';
import type { LeaderRead, Term } from './leader-reads.js';
import type { Wait } from './line-order.js';
import type { Holding } from './oracle.js';
import type { Random } from './random.js';
import type { TickRun } from './ticks.js';
import { pause } from './virtual-time.js';

/** The shortest and longest TTL the workload asks for (ms). */
export const MIN_TTL_MS = 50;
export const MAX_TTL_MS = 800;
/** The longest a workload acquisition waits for a busy resource (ms). */
export const MAX_WAIT_MS = 1_500;

/**
 * What one acquisition takes: a lock, all of the resources at once, a semaphore's or
 * read-write lock's side, or the leadership of an election (campaign.ts).
 */
export type Action = 'lock' | 'all' | 'permit' | 'read' | 'write' | 'lead';

export interface Workload {
  readonly actions: readonly Action[];
  /** The locks' resources (`all` takes every one of them). */
  readonly resources: readonly string[];
  readonly permits: number;
  /** The longest TTL asked for (ms, at most MAX_TTL_MS). */
  readonly maxTtlMs: number;
  /** How the clients use what they acquire (the mix of everything unless a focus says). */
  readonly habits?: Habits;
}

/**
 * What a focus changes in how the clients acquire and use a lock; every field draws from the
 * client's own PRNG as the mix does, so a focus changes only what it names.
 */
export interface Habits {
  /** The shortest TTL asked for (ms). */
  readonly minTtlMs: number;
  /** Share of acquisitions that wait; the others poll with `waitMs: 0` (unless fair). */
  readonly waitShare: number;
  /** Share of fair acquisitions. */
  readonly fairShare: number;
  /** Whether fencing, auto-extension and extension by hand take part. */
  readonly extends: boolean;
  /** How long a holding is used, in TTLs (beyond 1, it outlives its lease). */
  readonly useTtls: (own: Random, autoExtend: boolean) => number;
  /** The longest pause after a failed acquisition (ms). */
  readonly pauseAfterFailureMs: number;
}

/** The mix: every kind of acquisition, holdings used up to 1.3 TTLs (3 with auto-extension). */
const MIXED: Habits = {
  minTtlMs: MIN_TTL_MS,
  waitShare: 1,
  fairShare: 0.4,
  extends: true,
  useTtls: (own, autoExtend) => own.next() * (autoExtend ? 3 : 1.3),
  pauseAfterFailureMs: 50,
};

export interface Client extends FaultTargets {
  readonly semaphore: Semaphore;
  readonly readWrite: ReadWriteLock;
  /** The client's connection to the fenced store. */
  readonly store: SimConnection;
  /** Its acquisition of a lock under way (a client makes one at a time), for its events. */
  waiting: Wait | undefined;
}

/** What a schedule keeps of what its clients did. */
export interface Journal {
  readonly holdings: Holding[];
  /** The workload's acquisitions of one lock that may wait, in call order. */
  readonly waits: Wait[];
  /** With one node, its clock (µs since the epoch): what its fences are drawn above. */
  nodeClockUs: (() => bigint) | undefined;
  /** The elections' leaderships, and the reads of their leader (leader-reads.ts). */
  readonly terms: Term[];
  readonly leaderReads: LeaderRead[];
  /** The runs of the scheduled job (ticks.ts). */
  readonly tickRuns: TickRun[];
  /** Holdings whose validity ran out without their signal firing. */
  readonly silent: string[];
  note(line: string): void;
}

/** A held lock, several locks, a permit or a side of a read-write lock, as one handle. */
type Handle = Lock | MultiLock;

/** One resource a handle holds, as the oracle sees it. */
interface Held {
  readonly resource: string;
  readonly kind: Holding['kind'];
  readonly fence: bigint | undefined;
}

/** What one acquisition asks for. */
export interface Ask {
  readonly action: Action;
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly fair: boolean;
  readonly fencing: boolean;
  readonly autoExtend: boolean;
  /** For `lock`: which of the resources. */
  readonly resource: string;
}

/** Draws one acquisition of `workload`. */
export function drawAsk(workload: Workload, own: Random): Ask {
  const habits = workload.habits ?? MIXED;
  const action = own.pick(workload.actions);
  const resource = own.pick(workload.resources);
  const locks = action === 'lock' || action === 'all';
  const ttlMs = own.int(habits.minTtlMs, workload.maxTtlMs);
  const waitMs = own.int(0, MAX_WAIT_MS);
  const fair = own.chance(habits.fairShare);
  const fencing = locks && own.chance(0.4);
  const autoExtend = own.chance(0.3);
  return {
    action,
    resource,
    ttlMs,
    // The mix (every acquisition waits) draws nothing more here, so its seeds replay as before.
    waitMs: habits.waitShare >= 1 || own.chance(habits.waitShare) ? waitMs : 0,
    fair,
    fencing: habits.extends && fencing,
    autoExtend: habits.extends && autoExtend,
  };
}

/** Acquires what `ask` names; returns the handle and what it holds. */
export async function acquire(
  client: Client,
  workload: Workload,
  ask: Ask,
): Promise<{ handle: Handle; held: Held[] }> {
  const { ttlMs, waitMs, fair, autoExtend, fencing } = ask;
  const options = { ttlMs, waitMs, fair, autoExtend };
  const { locker } = client;
  switch (ask.action) {
    case 'lock': {
      const lock = await locker.acquire(ask.resource, { ...options, fencing });
      return { handle: lock, held: [{ resource: ask.resource, kind: 'lock', fence: lock.fence }] };
    }
    case 'all': {
      const all = await locker.acquireAll(workload.resources, { ...options, fencing });
      const held = all.resources.map((resource) => ({
        resource,
        kind: 'lock' as const,
        fence: all.fences.get(resource),
      }));
      return { handle: all, held };
    }
    case 'permit': {
      const permit = await client.semaphore.acquire(options);
      return { handle: permit, held: [{ resource: 's0', kind: 'permit', fence: undefined }] };
    }
    case 'lead':
      throw new Error('a campaign goes through leadOnce (campaign.ts)');
    default: {
      const side = await client.readWrite[ask.action].acquire(options);
      return { handle: side, held: [{ resource: 'w0', kind: ask.action, fence: undefined }] };
    }
  }
}

/**
 * One acquisition by `client`, used and released: the client trusts it from the moment
 * `acquire` resolved until the earliest of its validity deadline (`remainingMs()` read then,
 * or after a successful `extend`; never, with auto-extension, which the signal covers), its
 * signal firing, the end of its use and its locker's close.
 */
export async function holdOnce(
  client: Client,
  workload: Workload,
  own: Random,
  journal: Journal,
): Promise<void> {
  const habits = workload.habits ?? MIXED;
  const ask = drawAsk(workload, own);
  if (ask.action === 'lead') {
    const led = await leadOnce(client, ask, own.next() * ask.ttlMs * 3, journal);
    if (led instanceof Error) await pause(own.next() * habits.pauseAfterFailureMs); // as a failed acquisition
    return;
  }
  const name =
    ask.action === 'all'
      ? workload.resources.join('+')
      : ask.action === 'lock'
        ? ask.resource
        : ask.action;
  const startedAt = performance.now();
  const clockAtStartUs = journal.nodeClockUs?.();
  const wait =
    ask.action === 'lock' && (ask.waitMs > 0 || ask.fair)
      ? noteWait(client, ask, journal)
      : undefined;
  let acquired: Awaited<ReturnType<typeof acquire>>;
  try {
    acquired = await acquire(client, workload, ask);
    if (wait) wait.grantedAt = performance.now();
  } catch (error) {
    journal.note(`c${client.id} ${name} failed ${(error as Error).name}`);
    if (wait) wait.endedAt = performance.now();
    client.waiting = undefined;
    await pause(own.next() * habits.pauseAfterFailureMs);
    return;
  }
  const { handle, held } = acquired;
  const acquiredAt = performance.now();
  if (wait) wait.endedAt = acquiredAt;
  client.waiting = undefined;
  let deadline = ask.autoExtend ? Number.POSITIVE_INFINITY : acquiredAt + handle.remainingMs();
  let lostAt = Number.POSITIVE_INFINITY;
  handle.signal.addEventListener('abort', () => {
    lostAt = performance.now();
  });
  const fences = held.map((one) => one.fence).join(',');
  journal.note(`c${client.id} ${name} held until ${deadline.toFixed(3)} fence ${fences}`);

  const useMs = habits.useTtls(own, ask.autoExtend) * ask.ttlMs;
  const split = own.next();
  const extendTtlMs =
    !ask.autoExtend && own.chance(0.3) && habits.extends
      ? own.int(MIN_TTL_MS, workload.maxTtlMs)
      : 0;
  const writes = own.chance(0.7) ? held.filter((one) => one.fence !== undefined) : [];
  await pause(useMs * split);
  if (extendTtlMs > 0) {
    try {
      await handle.extend(extendTtlMs);
      deadline = performance.now() + handle.remainingMs();
      journal.note(`c${client.id} ${name} extended until ${deadline.toFixed(3)}`);
    } catch (error) {
      journal.note(`c${client.id} ${name} extend failed ${(error as Error).name}`);
    }
  }
  for (const { resource, fence } of writes) {
    const result = await fencedWrite(
      client.store,
      storeKey(resource),
      fence as bigint,
      `c${client.id}`,
    ).catch((error: Error) => error.name);
    journal.note(`c${client.id} ${resource} fenced write ${fence}: ${result}`);
  }
  await pause(useMs * (1 - split));

  if (
    handle.remainingMs() === 0 &&
    !handle.signal.aborted &&
    client.closedAt === Number.POSITIVE_INFINITY
  ) {
    journal.silent.push(
      `c${client.id} ${name}: validity ran out at ${performance.now()} and no signal`,
    );
  }
  const to = Math.min(performance.now(), deadline, lostAt, client.closedAt);
  const releaseAt = performance.now();
  const result = await handle.release().catch((error: Error) => error.name);
  journal.note(`c${client.id} ${name} released ${result}`);
  const releasedAt = result === 'released' ? { releasedAt: releaseAt } : {};
  const clock = clockAtStartUs === undefined ? {} : { startedAt, clockAtStartUs };
  for (const { resource, kind, fence } of held) {
    journal.holdings.push({
      client: client.id,
      resource,
      kind,
      permits: workload.permits,
      from: acquiredAt,
      to,
      fence,
      ...releasedAt,
      ...clock,
    });
  }
}

/** Starts the record of `client`'s acquisition of a lock that may wait (see line-order.ts). */
function noteWait(client: Client, ask: Ask, journal: Journal): Wait {
  const now = performance.now();
  const wait: Wait = {
    client: client.id,
    resource: ask.resource,
    order: journal.waits.length,
    fair: ask.fair,
    deadline: now + ask.waitMs,
  };
  journal.waits.push(wait);
  client.waiting = wait;
  return wait;
}
