import type { Clock } from '../clock.js';
import type { RedisConnection } from '../driver/connection.js';
import type { NodeResult } from './node-result.js';
import { verdictOf } from './tally.js';

/** How one node's reply counts: a yes vote, or a refusal (with the holder's PTTL if known). */
export type Judgement = { vote: 'yes' } | { vote: 'no'; holderRemainingMs?: number };

/** The state of a fan-out when its verdict became certain. */
export interface Decision {
  /** Whether a majority said yes. */
  readonly quorum: boolean;
  /** Monotonic instant at which the verdict became certain. */
  readonly decidedAt: number;
  /** Per-node results, in node order; `undefined` for nodes that had not answered yet. */
  readonly results: readonly (NodeResult | undefined)[];
}

/** A request sent to every node at once. */
export interface FanOut {
  /** Resolves as soon as the verdict is certain; stragglers are not waited for. */
  readonly decided: Promise<Decision>;
  /** Resolves when every node answered or timed out. */
  readonly settled: Promise<readonly NodeResult[]>;
}

/**
 * Sends `run` to every node in parallel. Each node gets at most `timeoutMs` (one timer for
 * the whole fan-out); a node that has not answered by then counts as `timeout`, and its late
 * reply is ignored.
 */
export function fanOut<Node extends RedisConnection, T>(
  nodes: readonly Node[],
  timeoutMs: number,
  clock: Clock,
  run: (node: Node, signal: AbortSignal) => Promise<T>,
  judge: (reply: T) => Judgement,
): FanOut {
  const results: (NodeResult | undefined)[] = new Array(nodes.length).fill(undefined);
  const controller = new AbortController();
  let yes = 0;
  let against = 0;
  let pending = nodes.length;
  let decided = false;
  let onDecided!: (decision: Decision) => void;
  let onSettled!: (all: readonly NodeResult[]) => void;
  const decidedPromise = new Promise<Decision>((resolve) => {
    onDecided = resolve;
  });
  const settledPromise = new Promise<readonly NodeResult[]>((resolve) => {
    onSettled = resolve;
  });

  const record = (index: number, result: NodeResult) => {
    if (results[index] !== undefined) return; // already counted as timed out
    results[index] = result;
    if (result.outcome === 'yes') yes++;
    else against++;
    pending--;
    const verdict = verdictOf(yes, against, nodes.length);
    if (!decided && (verdict !== 'open' || pending === 0)) {
      decided = true;
      onDecided({ quorum: verdict === 'quorum', decidedAt: clock.now(), results });
    }
    if (pending === 0) {
      clearTimeout(timer);
      onSettled(results as NodeResult[]);
    }
  };

  if (nodes.length === 0) {
    onDecided({ quorum: false, decidedAt: clock.now(), results });
    onSettled([]);
    return { decided: decidedPromise, settled: settledPromise };
  }

  const timer = setTimeout(() => {
    controller.abort();
    results.forEach((result, index) => {
      if (result === undefined) {
        record(index, { node: nodeName(nodes, index), outcome: 'timeout', timeoutMs });
      }
    });
  }, timeoutMs);
  timer.unref();

  const startedAt = clock.now();
  nodes.forEach((node, index) => {
    // A throwing `run` or `judge` becomes this node's error vote, never an unhandled rejection.
    Promise.resolve()
      .then(() => run(node, controller.signal))
      .then(judge)
      .then(
        (judgement) => {
          const latencyMs = clock.now() - startedAt;
          record(
            index,
            judgement.vote === 'yes'
              ? { node: node.name, outcome: 'yes', latencyMs }
              : { node: node.name, outcome: 'no', latencyMs, ...holder(judgement) },
          );
        },
        (error: unknown) => {
          record(index, { node: node.name, outcome: 'error', error: asError(error) });
        },
      );
  });

  return { decided: decidedPromise, settled: settledPromise };
}

function holder(judgement: { holderRemainingMs?: number }) {
  return judgement.holderRemainingMs === undefined
    ? {}
    : { holderRemainingMs: judgement.holderRemainingMs };
}

function nodeName(nodes: readonly RedisConnection[], index: number): string {
  return nodes[index]?.name ?? `node ${index}`;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
