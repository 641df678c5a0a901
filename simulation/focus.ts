/**
 * What each focus (shape.ts) changes in the world and the workload of a schedule: a
 * concentration of the orderings that one kind of bug needs, which the mix reaches once in
 * several hundred schedules or never.
 */
import { DEFAULTS } from '../src/config/options.js';
import type { FaultRates } from './network.js';
import type { Random } from './random.js';
import type { FaultKind, Focus } from './shape.js';
import type { Action, Habits } from './workload.js';
import { MAX_TTL_MS, MIN_TTL_MS } from './workload.js';

/** The focus a seed draws from its first number, `draw` in [0, 1). */
export function drawnFocus(draw: number): Focus {
  // The ranges of the first three predate the others: their seeds replay as they did.
  if (draw < 0.25) return 'late-requests';
  if (draw < 0.42) return 'slow-replies';
  if (draw >= 0.55 && draw < 0.62) return 'line-order';
  if (draw >= 0.62 && draw < 0.69) return 'drift-edge';
  if (draw >= 0.69 && draw < 0.76) return 'late-takes';
  // Clear of the first draws of the regression seeds (test/simulation/engine.test.ts).
  if (draw >= 0.9 && draw < 0.97) return 'slot-moves';
  if (draw >= 0.97) return 'late-leaders';
  return 'mixed';
}

export interface FocusSettings {
  /** The longest TTL asked for (ms). */
  readonly maxTtlMs: number;
  /** How clients acquire and use locks; the mix's when absent. */
  readonly habits?: Habits;
  /** Every node's clock runs fast at this rate, instead of a drawn drift. */
  readonly driftRate?: number;
  /** No fault at all: the links only delay messages, and nothing is injected. */
  readonly quiet: boolean;
  /** The link faults' rates that differ from the mix's (`mixed`), drawn after the mix's. */
  readonly rates?: (random: Random, mixed: FaultRates) => Partial<FaultRates>;
  /** The most nodes (of 1, 3 or 5, as drawn). */
  readonly maxNodes?: number;
  /** The first node is a Redis Cluster whose slots move (see cluster.ts). */
  readonly cluster?: boolean;
  /** The mix's clients, resources and kinds of acquisition, not a plain lock's contention. */
  readonly mixedWorkload?: boolean;
  /** What the focused workload does, when not plain locks (`lock`). */
  readonly actions?: readonly Action[];
  /** Faults that never happen in the focus (they still draw their numbers, as in shape.ts). */
  readonly off?: readonly FaultKind[];
  /**
   * Every fault hits only a minority of the nodes (3 or 5 of them), so that a majority stays
   * healthy while faults go on: the scheduled job must then run every tick of the workload.
   */
  readonly faultyMinority?: boolean;
  /**
   * 3 or 5 nodes, and lockers on the default restart grace: the longest lease on record on
   * the nodes (their lease records), not `restartGraceMs`.
   */
  readonly leaseRecords?: boolean;
}

/** Orphaned requests up to 600 ms late (the mix also resets more often; see network.ts). */
const LATE_REQUESTS: FocusSettings = {
  maxTtlMs: MAX_TTL_MS,
  quiet: false,
  maxNodes: 3,
  rates: () => ({ lateMs: 600 }),
};

/**
 * Short leases, where 20 ms of elapsed time is a large part of the validity, and many slow
 * messages, up to just inside the per-node timeout (20 ms for these TTLs).
 */
const SLOW_REPLIES: FocusSettings = {
  maxTtlMs: 150,
  quiet: false,
  rates: (_random, mixed) => ({ slowMs: 19, slow: 0.3 + mixed.slow * 3 }),
};

const LINE_ORDER: FocusSettings = {
  maxTtlMs: 300,
  quiet: true,
  // Messages at most 2 ms late: the oracle's slack is a few of them.
  rates: (_random, mixed) => ({ delayMs: Math.min(mixed.delayMs, 1) }),
  habits: {
    minTtlMs: MIN_TTL_MS,
    waitShare: 1,
    fairShare: 0.25,
    extends: false,
    // Mostly short holds, released and taken back at once (barging); a quarter run out, so
    // that the lock is free while waiters wait.
    useTtls: (own) => (own.chance(0.25) ? 1 + own.next() * 0.3 : own.next() * 0.15),
    pauseAfterFailureMs: 50,
  },
};

const DRIFT_EDGE: FocusSettings = {
  maxTtlMs: MAX_TTL_MS,
  quiet: true,
  // The fastest a node's clock may run for the engine's drift allowance to cover it.
  driftRate: DEFAULTS.driftFactor,
  habits: {
    // Long leases: the drift allowance is a share of the TTL.
    minTtlMs: 300,
    waitShare: 0,
    fairShare: 0,
    extends: false,
    // Every holding is used past its validity, so that it ends at its deadline.
    useTtls: (own) => 1 + own.next() * 0.3,
    pauseAfterFailureMs: 3,
  },
};

/**
 * One node, whose loss of a key leaves its holder with nothing. A take slower than the
 * per-node timeout ends its attempt; the attempt's undo follows it on the same connection;
 * the connection resets, and what it carried arrives again later, in order (an orphaned
 * proxy upstream), after the next attempt may have taken the lock.
 */
const LATE_TAKES: FocusSettings = {
  maxTtlMs: MAX_TTL_MS,
  quiet: false,
  maxNodes: 1,
  // Holders trust their lease to its end: an extension would find the key overwritten and
  // end the holding before anyone else could take the lock.
  habits: {
    minTtlMs: MIN_TTL_MS,
    waitShare: 1,
    fairShare: 0.4,
    extends: false,
    useTtls: (own) => 0.8 + own.next() * 0.5,
    pauseAfterFailureMs: 50,
  },
  rates: (random) => ({
    requestLoss: 0,
    replyLoss: 0,
    slow: 0.2 + random.next() * 0.2,
    slowMs: 60,
    reset: 0.2 + random.next() * 0.2,
    lateDelivery: 0.9,
    lateInOrder: true,
    resend: 0,
    lateMs: random.pick([100, 200, 300]),
  }),
};

/**
 * Plain locks, elections and a scheduled job on one node whose connections reset, with a
 * client library that sends what a reset left unanswered again and answers its caller from
 * that copy (ioredis's default for clients users pass), while the first copy, held upstream,
 * arrives up to 2 s late: a leader's own take or proclaim lands again after it resigned (and
 * after later leaderships ended), and a scheduled tick's after its retry took it. No
 * restarts, failovers or clock jumps: after those a read may name a resigned leader, as
 * docs/election.md says.
 */
const LATE_LEADERS: FocusSettings = {
  ...LATE_TAKES,
  actions: ['lock', 'lead'],
  off: ['crash', 'failover', 'clock-jump'],
  rates: (random, mixed) => ({
    ...LATE_TAKES.rates?.(random, mixed),
    answeredResend: 0.9,
    lateMs: random.pick([600, 1000, 2000]),
  }),
};

/**
 * Plain locks, elections and the scheduled job on 3 or 5 nodes, with every fault of the mix
 * (lost, slow, late and resent messages, resets, pauses, crashes, failovers, clock jumps) on
 * a minority of them, and none of the clients' (pauses and closes): every tick must run
 * during the workload, and once only.
 */
const FAULTY_MINORITY: FocusSettings = {
  maxTtlMs: MAX_TTL_MS,
  quiet: false,
  actions: ['lock', 'lead'],
  off: ['client-pause', 'close'],
  faultyMinority: true,
};

/** The mix on 3 or 5 nodes, its lockers keeping lease records (see `leaseRecords`). */
const LEASE_RECORDS: FocusSettings = {
  maxTtlMs: MAX_TTL_MS,
  quiet: false,
  mixedWorkload: true,
  leaseRecords: true,
};

/** The mix, with its first node a Redis Cluster whose slots keep moving. */
const SLOT_MOVES: FocusSettings = {
  maxTtlMs: MAX_TTL_MS,
  quiet: false,
  cluster: true,
  mixedWorkload: true,
};

/** The world and workload of `focus`. */
export function focusSettings(focus: Focus): FocusSettings {
  switch (focus) {
    case 'line-order':
      return LINE_ORDER;
    case 'drift-edge':
      return DRIFT_EDGE;
    case 'late-takes':
      return LATE_TAKES;
    case 'late-requests':
      return LATE_REQUESTS;
    case 'slow-replies':
      return SLOW_REPLIES;
    case 'slot-moves':
      return SLOT_MOVES;
    case 'late-leaders':
      return LATE_LEADERS;
    case 'faulty-minority':
      return FAULTY_MINORITY;
    case 'lease-records':
      return LEASE_RECORDS;
    default:
      return { maxTtlMs: MAX_TTL_MS, quiet: false };
  }
}
