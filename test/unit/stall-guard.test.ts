import { describe, expect, it } from 'vitest';
import { NotSentError, type RedisConnection } from '../../src/driver/connection.js';
import { StallGuard } from '../../src/driver/stall-guard.js';

/** A node whose replies the test releases by hand. */
function manualNode() {
  const waiting: ((reply: unknown) => void)[] = [];
  let sent = 0;
  const node: RedisConnection = {
    name: 'n:1',
    close: async () => {},
    send: () => {
      sent++;
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
  return { node, waiting, sent: () => sent };
}

describe('StallGuard', () => {
  it('sends nothing new while a command outlived its timeout, until that command is answered', async () => {
    const { node, waiting, sent } = manualNode();
    const guard = new StallGuard(node);
    const first = guard.send('SET', [], 10);
    guard.markStalled();
    await expect(guard.send('SET', [], 10)).rejects.toBeInstanceOf(NotSentError);
    expect(sent()).toBe(1);
    const cleanup = guard.forced.send('DEL', [], 10); // deletes are always sent
    expect(sent()).toBe(2);
    for (const answer of waiting) answer(1);
    await Promise.all([first, cleanup]);
    expect(guard.stalled).toBe(false);
    void guard.send('SET', [], 10);
    expect(sent()).toBe(3);
  });

  it('is not marked stalled when nothing is in flight', () => {
    const guard = new StallGuard(manualNode().node);
    guard.markStalled();
    expect(guard.stalled).toBe(false);
  });
});
