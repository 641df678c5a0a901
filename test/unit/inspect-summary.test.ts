import { describe, expect, it } from 'vitest';
import { NoReplyError } from '../../src/errors.js';
import { type NodeInspection, summary } from '../../src/kinds/mutex/inspect.js';

const held = (remainingMs: number | null, fence: bigint | null = null, waiters = 0) =>
  ({ node: 'n', reachable: true, held: true, remainingMs, fence, waiters }) as NodeInspection;
const free = (fence: bigint | null = null, waiters = 0): NodeInspection => ({
  node: 'n',
  reachable: true,
  held: false,
  remainingMs: null,
  fence,
  waiters,
});
const unread: NodeInspection = {
  node: 'n',
  reachable: false,
  error: new NoReplyError('n', 'the inspection', 100),
  held: false,
  remainingMs: null,
  fence: null,
  waiters: 0,
};

describe('the summary of an inspection', () => {
  it('says how long a majority keeps the key: the majority-th longest remaining time', () => {
    const seen = summary('r', [held(900, 3n, 1), held(400, 4n, 2), held(700)]);
    expect(seen).toMatchObject({ state: 'held', heldOn: 3, quorum: 2, remainingMs: 700 });
    expect(seen).toMatchObject({ fence: 4n, waiters: 2 });
  });

  it('is held on a bare majority, free below it, unknown when the unread could decide', () => {
    expect(summary('r', [held(500), held(300), free()])).toMatchObject({
      state: 'held',
      remainingMs: 300,
    });
    expect(summary('r', [held(500), free(), free()])).toMatchObject({
      state: 'free',
      held: false,
      remainingMs: null,
    });
    expect(summary('r', [held(500), unread, free()])).toMatchObject({
      state: 'unknown',
      remainingMs: null,
    });
    expect(summary('r', [free(2n), unread, unread]).state).toBe('unknown');
    expect(summary('r', [free(2n), unread, unread]).fence).toBe(2n);
  });

  it('counts a key without expiry as outliving the others', () => {
    expect(summary('r', [held(null), held(200), free()]).remainingMs).toBe(200);
    expect(summary('r', [held(null), held(null), free()]).remainingMs).toBeNull();
    expect(summary('r', [held(100)])).toMatchObject({ state: 'held', quorum: 1, remainingMs: 100 });
  });
});
