import { describe, expect, it } from 'vitest';
import type { Attempt } from '../../src/engine/attempt.js';
import type { LockContext } from '../../src/engine/context.js';
import { HandOverCount } from '../../src/engine/hand-over-count.js';

/** One node whose generation, subscriber readiness and vote the test sets; a clock it moves. */
function oneNode() {
  const state = { now: 1_000, generation: 1, readiness: 1, known: true };
  const context = {
    clock: { now: () => state.now },
    nodes: [{ name: 'n0', generation: 0, reportsReconnects: true, isCluster: false }],
    wakeUps: { readiness: () => state.readiness },
    identities: { known: () => state.known },
    settings: { driftFactor: 0.01, replicaAcks: 0 },
  };
  Object.defineProperty(context.nodes[0], 'generation', { get: () => state.generation });
  return { state, context: context as unknown as LockContext };
}

const busy: Attempt = {
  kind: 'busy',
  holderRemainingMs: 500,
  results: [{ node: 'n0', outcome: 'no', latencyMs: 1 }],
};
const silent: Attempt = {
  kind: 'unavailable',
  results: [{ node: 'n0', outcome: 'timeout', timeoutMs: 100 }],
};

/** A count whose last attempt, number 3, was sent at 1000 and answered `answer`. */
function sentThird(answer: Attempt = busy) {
  const node = oneNode();
  const count = new HandOverCount(node.context, 10_000);
  count.sending(3);
  count.answered(answer);
  node.state.now = 1_200; // the message comes 200 ms later
  return { ...node, count };
}

describe('counting a hand-over from its message', () => {
  it('counts the validity from the send time of the attempt it names', () => {
    const { count } = sentThird();
    const lock = count.counted({ node: 0, attempt: 3 });
    // 10 s - 200 ms elapsed - (1% drift + 2 ms), from the message's arrival at 1200.
    expect(lock?.deadline).toBe(1_200 + 10_000 - 200 - 102);
    expect(lock?.startedAt).toBe(1_000);
    expect(lock?.results.map((result) => result?.outcome)).toEqual(['yes']);
  });

  it('does not count a message that names an earlier attempt than the last one sent', () => {
    const { count } = sentThird();
    expect(count.counted({ node: 0, attempt: 2 })).toBeUndefined();
  });

  it('does not count when the last attempt had no answer (its undo may have deleted the hand-over)', () => {
    const { count } = sentThird(silent);
    expect(count.counted({ node: 0, attempt: 3 })).toBeUndefined();
  });

  it('does not count when the command connection or the subscriber connected again since', () => {
    const reconnected = sentThird();
    reconnected.state.generation++;
    expect(reconnected.count.counted({ node: 0, attempt: 3 })).toBeUndefined();
    const resubscribed = sentThird();
    resubscribed.state.readiness++;
    expect(resubscribed.count.counted({ node: 0, attempt: 3 })).toBeUndefined();
  });

  it("does not count while the node's votes do not (it abstains after a restart)", () => {
    const { state, count } = sentThird();
    state.known = false;
    expect(count.counted({ node: 0, attempt: 3 })).toBeUndefined();
  });

  it('does not count once less than half the TTL would be left', () => {
    const { state, count } = sentThird();
    state.now = 1_000 + 5_000;
    expect(count.counted({ node: 0, attempt: 3 })).toBeUndefined();
  });
});
