/**
 * A `RedisConnection` (src/driver/connection.ts) from one simulated client to one simulated
 * node, over a link that the seed drives. Requests reach the node in the order they were sent
 * (one TCP connection is FIFO), each after a random delay; replies come back in order too.
 * Faults: a lost request or reply (the caller's per-node timeout ends the wait), a reset of the
 * connection (unanswered commands reject; some of them still reach the node later, after the
 * new connection's, as from a socket buffer or a client library that resends unanswered
 * commands), a node paused or crashed, and a client that stops reading (a paused process).
 * The connection honours the contract: a command sent while it is down rejects at once with
 * `NotSentError` and is never sent; `generation` changes before the first command of a new
 * connection.
 */
import { NotSentError, type RedisConnection, type Subscriber } from '../src/driver/connection.js';
import { toConnectionValue } from '../src/testing/in-memory/reply.js';
import type { Links, WorldNode } from './network.js';

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly argv: readonly (string | number)[];
  /** Sent right after `ASKING`, on the same connection (a Redis Cluster's ASK). */
  readonly asking: boolean;
}

/** What the client side of a connection shares: when its process reads replies again. */
export interface ClientProcess {
  /** The client's name in the history (`c0`). */
  readonly name: string;
  /** Virtual time until which the client reads nothing (a paused process). */
  pausedUntil: number;
  /**
   * Virtual time until which nothing the client sends leaves it either (a client cut off from
   * every node, as by a partition): its requests wait, in order, and arrive after.
   */
  cutOffUntil: number;
}

export class SimConnection implements RedisConnection {
  readonly name: string;
  #generation = 1;
  /** Virtual time at which the connection is up again after a reset (0: up). */
  #downUntil = 0;
  /** The latest delivery time on each direction: FIFO within one live connection. */
  #lastToNode = 0;
  #lastToClient = 0;
  #pending = new Set<Pending>();
  #closed = false;
  readonly #forgetCrash: () => void;
  /** The link's name in the history (`c0→n1:6379`). */
  readonly #link: string;

  constructor(
    readonly world: WorldNode,
    readonly links: Links,
    readonly client: ClientProcess,
  ) {
    this.name = world.node.name;
    this.#link = `${client.name}→${this.name}`;
    this.#forgetCrash = world.onCrash(() => this.reset(world.downForMs()));
  }

  get generation(): number {
    return this.#generation;
  }

  get up(): boolean {
    return !this.#closed && performance.now() >= this.#downUntil && this.world.up;
  }

  send(command: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.#request(command, args, false);
  }

  /** `ASKING`, then the command, back to back (see simulation/cluster.ts). */
  sendAsking(command: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.#request(command, args, true);
  }

  #request(command: string, args: readonly (string | number)[], asking: boolean): Promise<unknown> {
    if (!this.up) return Promise.reject(new NotSentError(`${this.name} is down (simulated)`));
    return new Promise((resolve, reject) => {
      const request: Pending = { resolve, reject, argv: [command, ...args], asking };
      this.#pending.add(request);
      const generation = this.#generation;
      const { links } = this;
      if (!links.happens('requestLoss', this.#link)) this.#deliver(request, generation, 0);
      if (links.happens('reset', this.#link))
        this.reset(links.random.next() * 4 * links.rates.delayMs);
    });
  }

  sendAlways(command: string, args: readonly (string | number)[]): Promise<unknown> {
    return this.send(command, args);
  }

  /**
   * Sends `request` to the node: after a delay, FIFO behind this connection's earlier ones,
   * never before `notBefore`. Returns when it arrives.
   */
  #deliver(request: Pending, generation: number, extraMs: number, notBefore = 0): number {
    const now = performance.now();
    const leaves = Math.max(notBefore, this.client.cutOffUntil);
    const at = Math.max(this.#lastToNode, leaves, now + this.links.delay() + extraMs);
    if (generation === this.#generation) this.#lastToNode = at;
    this.links.arriving(at);
    setTimeout(() => this.#arrive(request, generation), at - now);
    return at;
  }

  /** The request reaches the node (if it is up), runs when the node is not paused. */
  #arrive(request: Pending, generation: number): void {
    if (!this.world.up) return; // a crashed node reads nothing
    const wait = this.world.runsAt() - performance.now();
    const run = () => {
      if (!this.world.up) return;
      const [command = '', ...args] = request.argv;
      const reply = this.world.execute(String(command), args, request.asking);
      if (generation !== this.#generation || this.#closed) return; // nobody reads the reply
      if (this.links.happens('replyLoss', this.#link)) return;
      const now = performance.now();
      const at = Math.max(this.#lastToClient, now + this.links.delay(), this.client.pausedUntil);
      this.#lastToClient = at;
      setTimeout(() => {
        if (generation !== this.#generation || !this.#pending.delete(request)) return;
        const value = toConnectionValue(reply);
        if (value instanceof Error) request.reject(value);
        else request.resolve(value);
      }, at - now);
    };
    if (wait > 0) setTimeout(run, wait);
    else run();
  }

  /**
   * Resets the connection: every unanswered command rejects with a reset error (it may have
   * reached the node); a new connection, with a new generation, is up after `downMs`. Some of
   * the cut-off requests still reach the node later, after the new connection's first ones.
   * With `answeredResend`, some are instead sent again on the new connection, whose reply
   * answers the caller, and their first copy arrives late all the same.
   */
  reset(downMs: number): void {
    if (this.#closed) return;
    const { random, rates } = this.links;
    const cut = [...this.#pending];
    this.#pending.clear();
    this.#generation += 1;
    this.#downUntil = performance.now() + downMs;
    this.#lastToNode = 0;
    this.#lastToClient = 0;
    // In order, the late requests of this reset come after one lateness, each behind the last.
    const lateness = rates.lateInOrder ? downMs + random.next() * rates.lateMs : 0;
    let lastLate = 0;
    const resent: Pending[] = [];
    for (const request of cut) {
      if (rates.answeredResend !== undefined && this.links.happens('answeredResend', this.#link)) {
        // The caller waits on, for the copy sent on the new connection; the first copy is
        // still on its way and lands late, maybe after the caller has long finished.
        resent.push(request);
        const lateMs = rates.lateInOrder ? lateness : downMs + random.next() * rates.lateMs;
        lastLate = this.#deliver(request, -1, lateMs, lastLate);
        continue;
      }
      request.reject(new Error('read ECONNRESET (simulated)'));
      if (this.links.happens('lateDelivery', this.#link)) {
        if (rates.lateInOrder) lastLate = this.#deliver(request, -1, lateness, lastLate);
        else this.#deliver(request, -1, downMs + random.next() * rates.lateMs);
      }
      if (this.links.happens('resend', this.#link)) {
        this.#deliver(request, -1, downMs + random.next() * 2 * rates.delayMs);
      }
    }
    for (const request of resent) {
      this.#pending.add(request);
      this.#deliver(request, this.#generation, downMs);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#forgetCrash();
    for (const request of this.#pending) request.reject(new Error('Connection is closed.'));
    this.#pending.clear();
  }

  openSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    return new SimSubscriber(this.world, this.links, this.client, onMessage, onReady);
  }
}

/** A pub/sub connection to a simulated node; it comes back (and says so) after a crash. */
class SimSubscriber implements Subscriber {
  #closed = false;
  readonly #unsubscribes = new Map<string, () => void>();
  readonly #forgetCrash: () => void;

  constructor(
    readonly world: WorldNode,
    readonly links: Links,
    readonly client: ClientProcess,
    readonly onMessage: (channel: string, message?: string) => void,
    readonly onReady: (() => void) | undefined,
  ) {
    this.#forgetCrash = world.onCrash(() => {
      this.#unsubscribes.clear(); // the restarted node has no subscribers
      setTimeout(() => this.#ready(), world.downForMs() + links.delay());
    });
    setTimeout(() => this.#ready(), links.delay());
  }

  #ready(): void {
    if (!this.#closed && this.world.up) this.onReady?.();
  }

  subscribe(channel: string): Promise<unknown> {
    if (!this.world.up) return Promise.reject(new Error('subscriber is down (simulated)'));
    return new Promise((resolve) => {
      setTimeout(() => {
        if (this.#closed || !this.world.up || this.#unsubscribes.has(channel)) return resolve(1);
        const stop = this.world.node.subscribe(channel, (c, message) => {
          if (
            this.links.happens('replyLoss', `${this.client.name}→${this.world.node.name} (pub/sub)`)
          )
            return;
          const at = Math.max(performance.now() + this.links.delay(), this.client.pausedUntil);
          setTimeout(() => {
            if (!this.#closed) this.onMessage(c, message);
          }, at - performance.now());
        });
        this.#unsubscribes.set(channel, stop);
        resolve(1);
      }, this.links.delay());
    });
  }

  async unsubscribe(channel: string): Promise<unknown> {
    this.#unsubscribes.get(channel)?.();
    this.#unsubscribes.delete(channel);
    return 1;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#forgetCrash();
    for (const stop of this.#unsubscribes.values()) stop();
    this.#unsubscribes.clear();
  }
}
