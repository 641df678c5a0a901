import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { knownScripts, NotSentError, type RedisConnection } from '../../src/driver/connection.js';
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
    await delay(10); // the command outlived its timeout
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

  it('marks only the shard whose command outlived its timeout, not one merely on its way', async () => {
    const { node, waiting } = manualNode();
    const guard = new StallGuard({ ...node, shardOf: (_command, args) => String(args[0]) });
    void guard.send('SET', ['a'], 10); // shard a stops answering
    await delay(8);
    void guard.send('SET', ['b'], 10); // shard b has a command on its way, not yet late
    await delay(3);
    guard.markStalled(); // a's timeout fired
    await expect(guard.send('SET', ['a'], 10)).rejects.toBeInstanceOf(NotSentError);
    const toB = guard.send('SET', ['b'], 10);
    expect(waiting).toHaveLength(3); // sent to b: before, b was refused as well
    for (const answer of waiting) answer(1);
    await toB;
  });

  it('is not marked stalled when nothing is in flight', () => {
    const guard = new StallGuard(manualNode().node);
    guard.markStalled();
    expect(guard.stalled).toBe(false);
  });

  it('shares what its server knows of scripts with its forced view: one socket, one cache', () => {
    const guard = new StallGuard(manualNode().node);
    knownScripts(guard).add('some-sha');
    // A NOSCRIPT seen through either view must clear both.
    expect(knownScripts(guard.forced)).toBe(knownScripts(guard));
  });
});
