/**
 * The simulated world the engine's connections run over: simulated nodes, each with its own
 * clock and its pauses and crashes, and the links between clients and nodes. Every delay,
 * loss and fault is drawn from the schedule's seeded PRNG; every delivery is a (virtual)
 * timer, so the order of events is a function of the seed.
 */
import type { Random } from './random.js';
import { SimulatedRedisNode } from './redis/node.js';
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
  /** Probability that a reset connection's client library sends an unanswered command again. */
  readonly resend: number;
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
  /** Called when the node crashes: its connections reset. */
  readonly #onCrash = new Set<() => void>();

  constructor(name: string, random: Random, maxDriftRate: number) {
    this.#driftRate = (random.next() * 2 - 1) * maxDriftRate;
    this.node = new SimulatedRedisNode({
      name,
      clockUs: () => BigInt(Math.floor(this.wallMs() * 1000)),
    });
  }

  /** The node's wall clock in ms since the epoch. */
  wallMs(): number {
    const elapsed = performance.now();
    return EPOCH_MS + elapsed * (1 + this.#driftRate) + this.#offsetMs;
  }

  /** Moves the node's clock by `ms` (back when negative). */
  jump(ms: number): void {
    this.#offsetMs += ms;
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

  onCrash(reset: () => void): () => void {
    this.#onCrash.add(reset);
    return () => this.#onCrash.delete(reset);
  }

  /** How long until the node is up again (0 when up). */
  downForMs(): number {
    return Math.max(0, this.#downUntil - performance.now());
  }
}

/** The delays and losses of links, drawn from the seed. */
export class Links {
  constructor(
    readonly random: Random,
    readonly rates: FaultRates,
  ) {}

  /** One message's delay (ms). */
  delay(): number {
    const { random, rates } = this;
    if (random.chance(rates.slow)) return random.next() * rates.slowMs;
    return random.next() * 2 * rates.delayMs;
  }
}
