import type { Clock } from '../clock.js';
import type { RedisConnection } from '../driver/connection.js';
import { asError, withoutTokens } from '../errors.js';
import type { NodeResult } from '../node-result.js';
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
  /** Sends the request to one node (`index` is its place in the list). */
  readonly run: (node: Node, index: number) => Promise<T>;
  /** Turns one node's reply into a vote; a throw becomes that node's error vote. */
  readonly judge: (reply: T) => Judgement;
  /** Told about each node that missed the timeout (its request is still unanswered). */
  readonly onTimeout?: (node: Node) => void;
  /** Yes votes that make the verdict: a majority unless told (see `quorumOf`). */
  readonly quorum?: number;
  /**
   * Settles before `timeoutMs` when it may: `afterMs` into the fan-out, with the verdict
   * known, the nodes still silent count as timed out (after `afterMs`) if `accept` takes the
   * results so far. Otherwise they keep the full `timeoutMs`. The same one timer serves both.
   */
  readonly settleEarly?: {
    readonly afterMs: number;
    readonly accept: (soFar: readonly NodeResult[]) => boolean;
  };
}

/**
 * Sends `run` to every node in parallel. Each node gets at most `timeoutMs` (one timer for
 * the whole fan-out); a node that has not answered by then counts as `timeout`, and its late
 * reply is ignored. Never rejects: a failure is a node's vote.
 */
export function fanOut<Node extends RedisConnection, T>(
  nodes: readonly Node[],
  options: FanOutOptions<Node, T>,
): FanOut {
  const { timeoutMs, clock, run, judge, onTimeout, quorum, settleEarly } = options;
  const results: (NodeResult | undefined)[] = new Array(nodes.length).fill(undefined);
  let yes = 0;
  let against = 0;
  let pending = nodes.length;
  let decision: Decision | undefined;
  let timer: NodeJS.Timeout | undefined;
  let onDecided: ((decision: Decision) => void) | undefined;
  const decided = new Promise<Decision>((resolve) => {
    onDecided = resolve;
  });
  // Made only when asked for: most callers need the verdict alone.
  let all: readonly NodeResult[] | undefined;
  let settledPromise: Promise<readonly NodeResult[]> | undefined;
  let onSettled: ((all: readonly NodeResult[]) => void) | undefined;
  const settle = (final: readonly NodeResult[]) => {
    if (all) return;
    all = final;
    onSettled?.(final);
  };

  const early = settleEarly && settleEarly.afterMs < timeoutMs ? settleEarly : undefined;
  let pastEarly = false;
  /** Once past `early.afterMs` with the verdict known: the results so far, if they do. */
  const settleIfEarlyEnough = () => {
    if (!early || !pastEarly || !decision || all) return;
    const soFar = results.map(
      (result, index): NodeResult =>
        result ?? { node: nodes[index]?.name ?? '', outcome: 'timeout', timeoutMs: early.afterMs },
    );
    if (early.accept(soFar)) settle(soFar);
  };
  const decide = () => {
    decision = {
      quorum: verdictOf(yes, against, nodes.length, quorum) === 'quorum',
      decidedAt: clock.now(),
      results,
    };
    onDecided?.(decision);
    settleIfEarlyEnough();
  };
  const record = (index: number, result: NodeResult) => {
    if (results[index] !== undefined) return; // already counted as timed out
    results[index] = result;
    if (result.outcome === 'yes') yes++;
    else against++;
    pending--;
    if (!decision && (pending === 0 || verdictOf(yes, against, nodes.length, quorum) !== 'open')) {
      decide();
    }
    if (pending === 0) {
      clearTimeout(timer);
      settle(results as NodeResult[]);
    }
  };

  const startedAt = clock.now();
  nodes.forEach((node, index) => {
    const failed = (error: unknown) => {
      // Node errors reach messages, events and logs: never with a token in them.
      record(index, { node: node.name, outcome: 'error', error: withoutTokens(asError(error)) });
    };
    const answered = (reply: T) => {
      let judgement: Judgement;
      try {
        judgement = judge(reply);
      } catch (error) {
        return failed(error);
      }
      record(index, resultOf(node.name, judgement, clock.now() - startedAt));
    };
    let reply: Promise<T>;
    try {
      reply = run(node, index);
    } catch (error) {
      reply = Promise.reject(error);
    }
    reply.then(answered, failed);
  });

  if (nodes.length === 0) {
    decide();
    settle([]);
  } else if (pending > 0) {
    const timedOut = () => {
      results.forEach((result, index) => {
        const node = nodes[index];
        if (result !== undefined || node === undefined) return;
        onTimeout?.(node);
        record(index, { node: node.name, outcome: 'timeout', timeoutMs });
      });
    };
    if (early) {
      timer = setTimeout(() => {
        pastEarly = true;
        settleIfEarlyEnough();
        timer = setTimeout(timedOut, timeoutMs - early.afterMs);
        timer.unref();
      }, early.afterMs);
    } else timer = setTimeout(timedOut, timeoutMs);
    timer.unref();
  }

  return {
    decided,
    get settled() {
      settledPromise ??= all
        ? Promise.resolve(all)
        : new Promise<readonly NodeResult[]>((resolve) => {
            onSettled = resolve;
          });
      return settledPromise;
    },
  };
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
