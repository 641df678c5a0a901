import { describe, expect, it } from 'vitest';
import { NoReplyError } from '../../src/errors.js';
import { type NodeInspection, summary } from '../../src/kinds/mutex/inspect.js';

const NO_OWNER = { owner: null, since: null } as const;
const held = (
  remainingMs: number | null,
  fence: bigint | null = null,
  waiters = 0,
  by: Pick<NodeInspection, 'owner' | 'since'> = NO_OWNER,
) =>
  ({
    node: 'n',
    reachable: true,
    held: true,
    remainingMs,
    fence,
    waiters,
    ...by,
  }) as NodeInspection;
const free = (fence: bigint | null = null, waiters = 0): NodeInspection => ({
  node: 'n',
  reachable: true,
  held: false,
  remainingMs: null,
  fence,
  waiters,
  ...NO_OWNER,
});
const unread: NodeInspection = {
  node: 'n',
  reachable: false,
  error: new NoReplyError('n', 'the inspection', 100),
  held: false,
  remainingMs: null,
  fence: null,
  waiters: 0,
  ...NO_OWNER,
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

  it('names the owner that most holding nodes name, and none once the lock is free', () => {
    const a = { owner: 'web-1:41', since: new Date(1_000) };
    const b = { owner: 'web-2:7', since: new Date(2_000) };
    expect(
      summary('r', [held(500, null, 0, b), held(500, null, 0, a), held(400, null, 0, a)]),
    ).toMatchObject(a);
    // The same label from another acquisition (another start) is another holder.
    const later = { owner: 'web-1:41', since: new Date(3_000) };
    expect(
      summary('r', [held(500, null, 0, a), held(500, null, 0, later), held(1, null, 0, later)]),
    ).toMatchObject(later);
    expect(summary('r', [held(500), held(500), held(500, null, 0, a)])).toMatchObject(a);
    expect(summary('r', [held(500, null, 0, a), free(), free()])).toMatchObject(NO_OWNER);
  });
});
