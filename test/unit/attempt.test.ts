import { describe, expect, it } from 'vitest';
import { NotSentError, type RedisConnection } from '../../src/driver/connection.js';
import { attemptAcquire } from '../../src/engine/attempt.js';
import type { AcquireRequest } from '../../src/engine/contract.js';
import { acquireFencedScript } from '../../src/kinds/mutex/lua/acquire-fenced.js';
import { raiseFenceScript } from '../../src/kinds/mutex/lua/raise-fence.js';
import { reclaimScript } from '../../src/kinds/mutex/lua/reclaim.js';
import { releaseScript } from '../../src/kinds/mutex/lua/release.js';
import { mutexKind } from '../../src/kinds/mutex/mutex-kind.js';
import { type FakeClock, fakeClock, fakeContext } from '../support/fake-context.js';

/** What a scripted node answers. */
interface NodeBehaviour {
  /** To `SET NX`: 'OK' (set), null (taken), an error, or 'silent' (never answers). */
  readonly set: 'OK' | null | Error | 'silent';
  /** The reclaim script's answer: 0 (the key is ours) or the holder's PTTL. */
  readonly reclaim?: number;
  /** The acquire-fenced script's answer: [state, fence]. */
  readonly fenced?: [number, string];
  /** The raise-fence script's answer: 1 raised, 0 the lock is not ours. */
  readonly raise?: number;
  /** How long each answer takes, on the fake clock. */
  readonly tookMs?: number;
}

/** A node that answers from its script and records what it was sent (script names). */
function scriptedNode(name: string, script: NodeBehaviour, clock: FakeClock) {
  const sent: string[] = [];
  // By SHA1 (EVALSHA) and by body (EVAL, a script's first call on a connection).
  const scriptNames = new Map(
    [reclaimScript, releaseScript, acquireFencedScript, raiseFenceScript].flatMap((s) => [
      [s.sha1, s.name],
      [s.lua, s.name],
    ]),
  );
  const connection: RedisConnection = {
    name,
    close: async () => {},
    send: async (command, args) => {
      clock.advance(script.tookMs ?? 1);
      const isScript = command === 'EVALSHA' || command === 'EVAL';
      const what = isScript ? (scriptNames.get(String(args[0])) ?? '?') : command;
      // A release records whether it announces ('1') or deletes silently ('0').
      sent.push(what === 'release' ? `release ${String(args.at(-1))}` : what);
      if (what === 'INFO') return `run_id:${name.replace(/\W/g, '')}ff`;
      if (what === 'SET') {
        if (script.set instanceof Error) throw script.set;
        if (script.set === 'silent') return new Promise(() => {});
        return script.set;
      }
      if (what === 'reclaim') return script.reclaim ?? 5_000;
      if (what === 'acquire-fenced') return script.fenced;
      if (what === 'raise-fence') return script.raise;
      if (what === 'release') return 1;
      throw new Error(`unexpected ${what}`);
    },
  };
  return { connection, sent };
}

/** A lock context over scripted nodes (and `extra` ones), after they were asked who they are. */
async function contextOver(
  scripts: readonly NodeBehaviour[],
  clock = fakeClock(),
  extra: readonly RedisConnection[] = [],
  nodeTimeoutMs = 1_000,
) {
  const nodes = scripts.map((script, i) => scriptedNode(`node${i}`, script, clock));
  const connections = [...nodes.map((n) => n.connection), ...extra];
  const context = fakeContext(connections, { clock, nodeTimeoutMs });
  await context.identities.check(context, 10_000);
  for (const node of nodes) node.sent.length = 0;
  return { context, sent: nodes.map((n) => n.sent), clock };
}

const request: AcquireRequest = {
  kind: mutexKind,
  key: 'k',
  token: 'tok',
  attempt: 1,
  unanswered: [],
  ttlMs: 10_000,
  fencing: false,
  fenceFromClock: false,
};

describe('one acquisition attempt is classified', () => {
  it('acquired: a majority set the key, validity = ttl - elapsed - drift', async () => {
    const { context } = await contextOver([{ set: 'OK' }, { set: 'OK' }, { set: null }]);
    const attempt = await attemptAcquire(context, request);
    expect(attempt.kind).toBe('acquired');
    if (attempt.kind !== 'acquired') return;
    // deadline = decidedAt + (ttl - elapsed - drift), so from the start: ttl - drift, where
    // drift = 10 000 x 0.01 + 2.
    expect(attempt.deadline - attempt.startedAt).toBe(10_000 - 102);
  });

  it('busy: other holders deny a majority; the one node we got is undone, silently', async () => {
    const { context, sent } = await contextOver([
      { set: 'OK' },
      { set: null, reclaim: 4_000 },
      { set: null, reclaim: 2_500 },
    ]);
    const attempt = await attemptAcquire(context, request);
    expect(attempt).toMatchObject({ kind: 'busy', holderRemainingMs: 2_500 });
    expect(sent).toEqual([
      ['SET', 'release 0'],
      ['SET', 'reclaim'],
      ['SET', 'reclaim'],
    ]);
  });

  it('unavailable: failed nodes made the difference; they are undone too', async () => {
    const reset = new Error('read ECONNRESET');
    const { context, sent } = await contextOver([{ set: 'OK' }, { set: reset }, { set: reset }]);
    const attempt = await attemptAcquire(context, request);
    expect(attempt.kind).toBe('unavailable');
    expect(attempt.results.map((r) => r?.outcome)).toEqual(['yes', 'error', 'error']);
    // A failed SET may still have landed: every node gets the compare-and-delete.
    expect(sent).toEqual([
      ['SET', 'release 0'],
      ['SET', 'release 0'],
      ['SET', 'release 0'],
    ]);
  });

  it('expired: a majority agreed, but the answers used up the validity', async () => {
    const slow = { set: 'OK' as const, tookMs: 5_000 };
    const { context } = await contextOver([slow, slow, slow]);
    const attempt = await attemptAcquire(context, request);
    expect(attempt.kind).toBe('expired');
    if (attempt.kind === 'expired') expect(attempt.elapsedMs).toBeGreaterThanOrEqual(10_000);
  });

  it('acquired when the key taken is our own from an earlier attempt (reclaimed)', async () => {
    const ours = { set: null, reclaim: 0 };
    const { context, sent } = await contextOver([ours, ours, { set: null, reclaim: 3_000 }]);
    const attempt = await attemptAcquire(context, request);
    expect(attempt.kind).toBe('acquired');
    expect(sent.map((s) => s.includes('reclaim'))).toEqual([true, true, true]);
  });

  it('sends nothing to a node that has not said which server it is', async () => {
    const strangerSent: string[] = [];
    const stranger: RedisConnection = {
      name: 'stranger',
      close: async () => {},
      send: async (command) => {
        strangerSent.push(command);
        if (command === 'INFO') throw new NotSentError('not connected yet');
        return 'OK'; // a SET would land: it might be node0 under another name
      },
    };
    const { context, sent } = await contextOver([{ set: 'OK' }, { set: null }], fakeClock(), [
      stranger,
    ]);
    const attempt = await attemptAcquire(context, request);
    expect(attempt.kind).toBe('unavailable');
    expect(strangerSent).toEqual(['INFO', 'GET']); // GET: its lease record, a read
    expect(sent[0]).toEqual(['SET', 'release 0']);
  });

  it('unavailable: a node that never answers counts as timed out, and is undone too', async () => {
    const behaviours: NodeBehaviour[] = [
      { set: 'OK' },
      { set: 'silent' },
      { set: null, reclaim: 3_000 },
    ];
    const { context, sent } = await contextOver(behaviours, fakeClock(), [], 20);
    const attempt = await attemptAcquire(context, request);
    expect(attempt.kind).toBe('unavailable');
    expect(attempt.results.map((r) => r?.outcome)).toEqual(['yes', 'timeout', 'no']);
    expect(sent[1]).toEqual(['SET', 'release 0']); // its SET may land later
  });

  it('unavailable: a fenced majority whose fence could not be settled on a majority', async () => {
    // Counters 5 and 3 disagree: 5 must be raised on a majority, and node 1 refuses.
    const { context, sent } = await contextOver([
      { set: null, fenced: [0, '5'], raise: 1 },
      { set: null, fenced: [0, '3'], raise: 0 },
      { set: null, fenced: [4_000, ''] },
    ]);
    const attempt = await attemptAcquire(context, { ...request, fencing: true });
    expect(attempt.kind).toBe('unavailable');
    expect(sent.map((s) => s.includes('raise-fence'))).toEqual([true, true, false]);
  });

  it('acquired with the largest fence once a majority holds it', async () => {
    const { context } = await contextOver([
      { set: null, fenced: [0, '5'], raise: 1 },
      { set: null, fenced: [0, '3'], raise: 1 },
      { set: null, fenced: [4_000, ''] },
    ]);
    const attempt = await attemptAcquire(context, { ...request, fencing: true });
    expect(attempt).toMatchObject({ kind: 'acquired', fence: 5n });
  });
});
