import { asError, withoutTokens } from '../caught-errors.js';
import type { Clock } from '../clock.js';
import type { RedisConnection } from '../driver/connection.js';
import type { NodeResult } from '../node-result.js';
import { awaitDeadline, type DeadlineWait, type Expiring, roundEnded } from './deadlines.js';
import { verdictOf } from './tally.js';

/** How one node's reply counts: a yes vote, or a refusal (with the holder's PTTL if known). */
export type Judgement =
  | { vote: 'yes'; fence?: bigint }
  | { vote: 'no'; holderRemainingMs?: number };

/** The state of a fan-out when its verdict became certain. */
export interface Decision {
  /** Whether a majority said yes. */
  readonly quorum: boolean;
  /** Monotonic instant at which the verdict became certain. */
  readonly decidedAt: number;
  /**
   * Per-node results, in node order; `undefined` for nodes that had not answered yet. The
   * array is live: late answers keep filling it (release relies on that to reach them).
   */
  readonly results: readonly (NodeResult | undefined)[];
}

/** A request sent to every node at once. */
export interface FanOut {
  /** Resolves as soon as the verdict is certain; stragglers are not waited for. */
  readonly decided: Promise<Decision>;
  /** Resolves when every node answered or timed out. */
  readonly settled: Promise<readonly NodeResult[]>;
}

/** How a fan-out runs. */
export interface FanOutOptions<Node extends RedisConnection, T> {
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Sends the request to one node, with `timeoutMs` (`index` is its place in the list). */
  readonly run: (node: Node, timeoutMs: number, index: number) => Promise<T>;
  /** Turns one node's reply into a vote; a throw becomes that node's error vote. */
  readonly judge: (reply: T) => Judgement;
  /** Told about each node that missed the timeout (its request is still unanswered). */
  readonly onTimeout?: (node: Node) => void;
  /** Yes votes that make the verdict: a majority unless told (see `quorumOf`). */
  readonly quorum?: number | undefined;
  /**
   * Settles before `timeoutMs` when it may: `afterMs` into the fan-out, with the verdict
   * known, the nodes still silent count as timed out (after `afterMs`) if `accept` takes the
   * results so far (given the fan-out's `quorum` too). Otherwise they keep the full `timeoutMs`.
   */
  readonly settleEarly?:
    | {
        readonly afterMs: number;
        readonly accept: (soFar: readonly NodeResult[], quorum: number | undefined) => boolean;
      }
    | undefined;
}

/**
 * Sends `run` to every node in parallel. Each node gets at most `timeoutMs` (one deadline for
 * the whole fan-out, on a timer fan-outs share); a node that has not answered by then counts
 * as `timeout`, and its late reply is ignored. Never rejects: a failure is a node's vote.
 */
export function fanOut<Node extends RedisConnection, T>(
  nodes: readonly Node[],
  options: FanOutOptions<Node, T>,
): FanOut {
  return new NodeRound(nodes, options);
}

/**
 * One fan-out's state as plain fields: every operation on N nodes makes one, so it costs one
 * object, one promise, a place on a shared timer's line and a reply handler per node, and
 * nothing more unless a caller asks for {@link NodeRound.settled}.
 */
class NodeRound<Node extends RedisConnection, T> implements FanOut, Expiring {
  readonly decided: Promise<Decision>;
  readonly #nodes: readonly Node[];
  readonly #options: FanOutOptions<Node, T>;
  readonly #results: (NodeResult | undefined)[];
  readonly #startedAt: number;
  #yes = 0;
  #against = 0;
  #pending: number;
  #decision: Decision | undefined;
  #onDecided!: (decision: Decision) => void;
  /** When the next timeout (`settleEarly.afterMs`, or the full one) is reached. */
  deadline = 0;
  /** What watches the deadline (see `awaitDeadline`). */
  #wait: DeadlineWait | undefined;
  /** Whether `settleEarly.afterMs` passed (the full timeout's deadline is awaited next). */
  #pastEarly = false;
  #all: readonly NodeResult[] | undefined;
  #settled: Promise<readonly NodeResult[]> | undefined;
  #onSettled: ((all: readonly NodeResult[]) => void) | undefined;

  constructor(nodes: readonly Node[], options: FanOutOptions<Node, T>) {
    this.#nodes = nodes;
    this.#options = options;
    // Pushed one by one: `new Array(n).fill()` calls into the runtime, a cost per operation.
    const results: undefined[] = [];
    for (let index = 0; index < nodes.length; index++) results.push(undefined);
    this.#results = results;
    this.#pending = nodes.length;
    this.decided = new Promise<Decision>((resolve) => {
      this.#onDecided = resolve;
    });
    const { clock, run, timeoutMs, settleEarly } = options;
    this.#startedAt = clock.now();
    for (let index = 0; index < nodes.length; index++) {
      const node = nodes[index] as Node;
      let reply: Promise<T>;
      try {
        reply = run(node, timeoutMs, index);
      } catch (error) {
        reply = Promise.reject(error);
      }
      reply.then(
        (value) => this.#answered(index, value),
        (error: unknown) => this.#failed(index, error),
      );
    }
    if (nodes.length === 0) {
      this.#decide();
      this.#settle([]);
    } else if (this.#pending > 0) {
      const afterMs =
        settleEarly && settleEarly.afterMs < timeoutMs ? settleEarly.afterMs : timeoutMs;
      this.#await(afterMs, afterMs);
    }
  }

  /** Waits for the nodes still silent until `afterMs` from the start (`delayMs` from now). */
  #await(afterMs: number, delayMs: number): void {
    this.deadline = this.#startedAt + afterMs;
    this.#wait = awaitDeadline(this, afterMs, this.#options.clock, delayMs);
  }

  /** Resolves when every node answered or timed out (made only when asked for). */
  get settled(): Promise<readonly NodeResult[]> {
    this.#settled ??= this.#all
      ? Promise.resolve(this.#all)
      : new Promise((resolve) => {
          this.#onSettled = resolve;
        });
    return this.#settled;
  }

  /** The deadline passed: `settleEarly.afterMs` (the rest of the timeout follows), or all. */
  expire(): void {
    const { settleEarly, timeoutMs } = this.#options;
    if (settleEarly && !this.#pastEarly && settleEarly.afterMs < timeoutMs) {
      this.#pastEarly = true;
      this.#settleIfEarlyEnough();
      // The rest of the timeout counts from the start, not from when this deadline passed.
      const leftMs = this.#startedAt + timeoutMs - this.#options.clock.now();
      this.#await(timeoutMs, Math.max(0, leftMs));
      return;
    }
    const { onTimeout } = this.#options;
    for (let index = 0; index < this.#nodes.length; index++) {
      const node = this.#nodes[index] as Node;
      if (this.#results[index] !== undefined) continue;
      onTimeout?.(node);
      this.#record(index, { node: node.name, outcome: 'timeout', timeoutMs });
    }
  }

  #answered(index: number, reply: T): void {
    let judgement: Judgement;
    try {
      judgement = this.#options.judge(reply);
    } catch (error) {
      this.#failed(index, error);
      return;
    }
    const name = (this.#nodes[index] as Node).name;
    const now = this.#options.clock.now();
    this.#record(index, resultOf(name, judgement, now - this.#startedAt), now);
  }

  #failed(index: number, error: unknown): void {
    // Node errors reach messages, events and logs: never with a token in them.
    const node = (this.#nodes[index] as Node).name;
    this.#record(index, { node, outcome: 'error', error: withoutTokens(asError(error)) });
  }

  /** Counts node `index`'s result; `now`, when the caller read the clock already. */
  #record(index: number, result: NodeResult, now?: number): void {
    if (this.#results[index] !== undefined) return; // already counted as timed out
    this.#results[index] = result;
    if (result.outcome === 'yes') this.#yes++;
    else this.#against++;
    this.#pending--;
    if (!this.#decision && (this.#pending === 0 || this.#verdict() !== 'open')) this.#decide(now);
    if (this.#pending === 0) {
      if (this.#wait !== undefined) roundEnded(this.#wait);
      this.#settle(this.#results as NodeResult[]);
    }
  }

  #verdict() {
    return verdictOf(this.#yes, this.#against, this.#nodes.length, this.#options.quorum);
  }

  #decide(now?: number): void {
    const decidedAt = now ?? this.#options.clock.now();
    this.#decision = { quorum: this.#verdict() === 'quorum', decidedAt, results: this.#results };
    this.#onDecided(this.#decision);
    this.#settleIfEarlyEnough();
  }

  /** Once past `settleEarly.afterMs` with the verdict known: the results so far, if they do. */
  #settleIfEarlyEnough(): void {
    const early = this.#options.settleEarly;
    if (!early || !this.#pastEarly || !this.#decision || this.#all) return;
    const soFar = this.#results.map(
      (result, index): NodeResult =>
        result ?? {
          node: this.#nodes[index]?.name ?? '',
          outcome: 'timeout',
          timeoutMs: early.afterMs,
        },
    );
    if (early.accept(soFar, this.#options.quorum)) this.#settle(soFar);
  }

  #settle(all: readonly NodeResult[]): void {
    if (this.#all) return;
    this.#all = all;
    this.#onSettled?.(all);
  }
}

/** A node's vote as its result (built without spreads: one object per reply). */
function resultOf(node: string, judgement: Judgement, latencyMs: number): NodeResult {
  if (judgement.vote === 'yes') {
    const { fence } = judgement;
    return fence === undefined
      ? { node, outcome: 'yes', latencyMs }
      : { node, outcome: 'yes', latencyMs, fence };
  }
  const { holderRemainingMs } = judgement;
  return holderRemainingMs === undefined
    ? { node, outcome: 'no', latencyMs }
    : { node, outcome: 'no', latencyMs, holderRemainingMs };
}
