/**
 * The simulated world the engine's connections run over: simulated nodes, each with its own
 * clock and its pauses and crashes, and the links between clients and nodes. Every delay,
 * loss and fault is drawn from the schedule's seeded PRNG; every delivery is a (virtual)
 * timer, so the order of events is a function of the seed.
 */

import { SimulatedRedisNode } from '../src/testing/in-memory/node.js';
import type { Reply } from '../src/testing/in-memory/reply.js';
import type { SimCluster } from './cluster.js';
import { focusSettings } from './focus.js';
import { compiledLua } from './lua/compile.js';
import type { Random } from './random.js';
import { allows, type Focus, type ScheduleShape } from './shape.js';
import { EPOCH_MS } from './virtual-time.js';

/** How often each fault happens; 0 turns it off. */
export interface FaultRates {
  /** Probability that a request is lost on the way to the node. */
  readonly requestLoss: number;
  /** Probability that a reply is lost on the way back. */
  readonly replyLoss: number;
  /** Probability, per request, that its connection resets right after sending it. */
  readonly reset: number;
  /** Probability that a request cut off by a reset still reaches the node, late. */
  readonly lateDelivery: number;
  /** How late, at most, after the new connection is up (ms). */
  readonly lateMs: number;
  /** Probability that a reset connection's client library sends an unanswered command again. */
  readonly resend: number;
  /**
   * Probability that a reset connection's client library sends an unanswered command again
   * on the new connection and answers its caller with that copy's reply (ioredis's
   * `autoResendUnfulfilledCommands`, on by default in clients users pass), while the first
   * copy, held by an orphaned proxy upstream, still arrives late. Absent: never, and nothing
   * is drawn for it, so that the schedules of the focuses without it keep their histories.
   */
  readonly answeredResend?: number;
  /**
   * Whether the late requests of one reset arrive together and in the order they were sent,
   * as an orphaned proxy upstream delivers what it buffered; otherwise each is late by its
   * own draw.
   */
  readonly lateInOrder?: boolean;
  /** Mean one-way delay (ms); each delay is random in [0, 2 × mean]. */
  readonly delayMs: number;
  /** Probability that a message is much slower than the mean (up to `slowMs`). */
  readonly slow: number;
  readonly slowMs: number;
}

/** One simulated node and what the world does to it. */
export class WorldNode {
  readonly node: SimulatedRedisNode;
  /** The node's wall clock: virtual time, plus a drift rate and jumps. */
  #offsetMs = 0;
  #driftRate: number;
  #pausedUntil = 0;
  #downUntil = 0;
  /** The Redis Cluster the node is a master of, if any: it decides what the node may run. */
  cluster: SimCluster | undefined;
  /** Called when the node crashes: its connections reset. */
  readonly #onCrash = new Set<() => void>();
  /** Called with every command the node runs for a client, and its reply. */
  readonly #observers = new Set<(argv: readonly string[], reply: Reply) => void>();

  /** `driftRate`: the clock's rate, when not drawn up to `maxDriftRate` either way. */
  constructor(name: string, random: Random, maxDriftRate: number, driftRate?: number) {
    const drawn = (random.next() * 2 - 1) * maxDriftRate;
    this.#driftRate = driftRate ?? drawn;
    this.node = new SimulatedRedisNode({
      name,
      clockUs: () => this.clockUs(),
      lua: compiledLua(),
      // Up for a while already (up to a day): a node first seen young abstains, as a
      // restarted one does, and every schedule would start with a grace.
      uptimeMs: random.next() * 86_400_000,
    });
  }

  /**
   * Runs a client's command on the node (`asking`: right after `ASKING`, see cluster.ts);
   * observers see it and its reply.
   */
  execute(command: string, args: readonly (string | number)[], asking = false): Reply {
    const reply =
      this.cluster?.refusal(this, command, args, asking) ?? this.node.send(command, args);
    if (this.#observers.size > 0) {
      const argv = [command, ...args.map(String)];
      for (const observe of this.#observers) observe(argv, reply);
    }
    return reply;
  }

  /** Sees every command the node runs for a client from now on, with its reply. */
  observe(observer: (argv: readonly string[], reply: Reply) => void): void {
    this.#observers.add(observer);
  }

  /** The node's wall clock in ms since the epoch. */
  wallMs(): number {
    const elapsed = performance.now();
    return EPOCH_MS + elapsed * (1 + this.#driftRate) + this.#offsetMs;
  }

  /** The node's wall clock in µs since the epoch, as `TIME` and fences read it. */
  clockUs(): bigint {
    return BigInt(Math.floor(this.wallMs() * 1000));
  }

  /** The clock's rate against virtual time, less 1 (0.01: 1 % fast). */
  get driftRate(): number {
    return this.#driftRate;
  }

  /**
   * Moves the node's clock by `ms` (back when negative). The masters of a cluster move
   * together: see `SimCluster`.
   */
  jump(ms: number): void {
    for (const server of this.cluster?.shards ?? [this]) server.#offsetMs += ms;
  }

  get up(): boolean {
    return performance.now() >= this.#downUntil;
  }

  /** When a request arriving now runs: now, or when the pause ends. */
  runsAt(): number {
    return Math.max(performance.now(), this.#pausedUntil);
  }

  pause(ms: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, performance.now() + ms);
  }

  /** Crashes the node now; it is back after `downMs`, restarted, with or without its keys. */
  crash(downMs: number, persistence: boolean): void {
    this.#downUntil = performance.now() + downMs;
    for (const reset of [...this.#onCrash]) reset();
    setTimeout(() => this.node.restart({ persistence }), downMs);
  }

  /**
   * Fails over to a replica that stops replicating now: the node goes on for `lagMs`, then
   * crashes, and after `downMs` the replica is promoted with the keys of `lagMs` ago.
   * `promoted` is told when (the writes of those `lagMs` are then lost). Returns what calls
   * the failover off, until the crash.
   */
  failover(lagMs: number, downMs: number, promoted: () => void): () => void {
    const replica = this.node.replicate();
    const timer = setTimeout(() => {
      this.#downUntil = performance.now() + downMs;
      for (const reset of [...this.#onCrash]) reset();
      setTimeout(() => {
        this.node.promote(replica);
        promoted();
      }, downMs);
    }, lagMs);
    return () => clearTimeout(timer);
  }

  onCrash(reset: () => void): () => void {
    this.#onCrash.add(reset);
    return () => this.#onCrash.delete(reset);
  }

  /** How long until the node is up again (0 when up). */
  downForMs(): number {
    return Math.max(0, this.#downUntil - performance.now());
  }
}

/** The faults of links that a draw decides, one message at a time. */
type LinkFault =
  | 'requestLoss'
  | 'replyLoss'
  | 'reset'
  | 'lateDelivery'
  | 'resend'
  | 'answeredResend';

/**
 * How often each fault of the links happens in one schedule, drawn from its seed and its
 * focus: a fifth of the mixed schedules are calm, a third reset connections often. Faults `shape` switches off are
 * drawn all the same, then set to 0.
 */
export function drawFaultRates(random: Random, shape: ScheduleShape, focus: Focus): FaultRates {
  const lateRequests = focus === 'late-requests';
  const { quiet, rates } = focusSettings(focus);
  const calm = (random.chance(0.2) && focus === 'mixed') || quiet;
  const p = (max: number) => (calm ? 0 : random.next() * max);
  // Some schedules reset connections often: late requests from old connections then meet
  // the later attempts and holders that invariant 11 protects.
  const stormy = random.chance(0.3) || lateRequests;
  const mixed: FaultRates = {
    requestLoss: p(0.03),
    replyLoss: p(0.03),
    reset: p(stormy ? 0.3 : 0.02),
    lateDelivery: lateRequests ? 0.5 + p(0.5) : p(1),
    resend: p(0.5),
    delayMs: 0.2 + random.next() * 6,
    // Slow messages around the per-node timeout (20 ms for these TTLs) eat validity.
    slow: p(0.2),
    slowMs: random.pick([15, 30, 60, 400]),
    // An orphaned request (a proxy's upstream, a socket buffer) may arrive long after the
    // retries that followed it.
    lateMs: random.pick([50, 200, 600]),
  };
  const drawn = rates ? { ...mixed, ...rates(random, mixed) } : mixed;
  const unless = (kind: Parameters<typeof allows>[1], rate: number) =>
    allows(shape, kind) ? rate : 0;
  return {
    ...drawn,
    requestLoss: unless('request-loss', drawn.requestLoss),
    replyLoss: unless('reply-loss', drawn.replyLoss),
    reset: unless('reset', drawn.reset),
    lateDelivery: unless('late-delivery', drawn.lateDelivery),
    resend: unless('resend', drawn.resend),
    ...(drawn.answeredResend === undefined
      ? {}
      : { answeredResend: unless('resend', drawn.answeredResend) }),
    slow: unless('slow', drawn.slow),
  };
}

/** The delays and losses of links, drawn from the seed, and how many faults they injected. */
export class Links {
  #rates: FaultRates;
  #faults = 0;
  #lastArrivalAt = 0;

  constructor(
    readonly random: Random,
    rates: FaultRates,
    /** Logs a fault that happened (a message lost, a reset, a late or resent request). */
    readonly note: (line: string) => void = () => {},
  ) {
    this.#rates = rates;
  }

  get rates(): FaultRates {
    return this.#rates;
  }

  /** Faults injected so far: messages lost or slowed, resets, late and resent requests. */
  get faults(): number {
    return this.#faults;
  }

  /**
   * When the last request sent so far reaches its node (virtual ms): faults stop sending
   * requests late (`calm`), but those already on their way late (cut off by a reset, resent,
   * slow) still arrive after it, and a take among them sets a key then.
   */
  get lastArrivalAt(): number {
    return this.#lastArrivalAt;
  }

  /** Notes that a request will reach its node at `at` (virtual ms). */
  arriving(at: number): void {
    this.#lastArrivalAt = Math.max(this.#lastArrivalAt, at);
  }

  /** Draws whether `fault` happens to the message at hand, on the link to `node`. */
  happens(fault: LinkFault, node: string): boolean {
    const yes = this.random.chance(this.#rates[fault] ?? 0);
    if (yes) {
      this.#faults += 1;
      this.note(`fault ${fault} ${node}`);
    }
    return yes;
  }

  /** One message's delay (ms). */
  delay(): number {
    const { random } = this;
    if (random.chance(this.#rates.slow)) {
      this.#faults += 1;
      return random.next() * this.#rates.slowMs;
    }
    return random.next() * 2 * this.#rates.delayMs;
  }

  /** From now on no message is lost or slow and no connection resets (faults stop). */
  calm(): void {
    this.#rates = {
      ...this.#rates,
      requestLoss: 0,
      replyLoss: 0,
      reset: 0,
      lateDelivery: 0,
      resend: 0,
      ...(this.#rates.answeredResend === undefined ? {} : { answeredResend: 0 }),
      slow: 0,
    };
  }
}
