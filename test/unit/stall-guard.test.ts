import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { knownScripts, NotSentError, type RedisConnection } from '../../src/driver/connection.js';
import { StallGuard } from '../../src/driver/stall-guard.js';

/** A node whose replies the test releases by hand. */
function manualNode() {
  const waiting: ((reply: unknown) => void)[] = [];
  const commands: string[] = [];
  const node: RedisConnection = {
    name: 'n:1',
    close: async () => {},
    send: (command) => {
      commands.push(command);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
  return { node, waiting, commands, sent: () => commands.length };
}

describe('StallGuard', () => {
  it('sends nothing new while a command outlived its timeout, until that command is answered', async () => {
    const { node, waiting, commands, sent } = manualNode();
    const guard = new StallGuard(node);
    const first = guard.send('SET', [], 10);
    await delay(10); // the command outlived its timeout
    guard.markStalled();
    await expect(guard.send('SET', [], 10)).rejects.toBeInstanceOf(NotSentError);
    expect(commands).toEqual(['SET', 'PING']); // the refused SET was not sent; a probe was
    const cleanup = guard.forced.send('DEL', [], 10); // deletes are always sent
    expect(sent()).toBe(3);
    const [firstReply] = waiting;
    firstReply?.(1);
    await first;
    expect(guard.stalled).toBe(false);
    void cleanup;
    void guard.send('SET', [], 10);
    expect(sent()).toBe(4);
  });

  it('probes a stalled server at most every 250 ms, and the answer to a probe ends the stall though the lost command never comes back', async () => {
    const { node, waiting, commands } = manualNode();
    const guard = new StallGuard(node);
    void guard.send('SET', [], 10); // lost: never answered
    await delay(11);
    guard.markStalled();
    await expect(guard.send('SET', [], 10)).rejects.toBeInstanceOf(NotSentError);
    await expect(guard.send('SET', [], 10)).rejects.toBeInstanceOf(NotSentError);
    expect(commands).toEqual(['SET', 'PING']); // one probe for both refusals
    await delay(260);
    await expect(guard.send('SET', [], 10)).rejects.toBeInstanceOf(NotSentError);
    expect(commands).toEqual(['SET', 'PING', 'PING']); // the first probe was not answered either
    waiting[2]?.('PONG');
    await delay(0);
    expect(guard.stalled).toBe(false);
    void guard.send('SET', [], 10);
    expect(commands).toEqual(['SET', 'PING', 'PING', 'SET']);
  });

  it('probes a server of a Cluster with a read of a key it serves, since a PING could reach any of them', async () => {
    const { node, waiting, commands } = manualNode();
    const sentArgs: unknown[] = [];
    const guard = new StallGuard({
      ...node,
      send: (command, args, timeoutMs) => {
        sentArgs.push(args);
        return node.send(command, args, timeoutMs);
      },
      shardOf: (_command, args) => String(args[0]).slice(0, 1),
    });
    void guard.send('SET', ['a1'], 10); // lost: never answered
    await delay(11);
    guard.markStalled();
    await expect(guard.send('SET', ['a2'], 10)).rejects.toBeInstanceOf(NotSentError);
    expect(commands.slice(0, 2)).toEqual(['SET', 'EXISTS']);
    expect(sentArgs[1]).toEqual(['a2']); // the refused command's key: routed to the stalled server
    waiting[1]?.(0); // the probe is answered: the server moves again
    await delay(0);
    expect(guard.stalled).toBe(false);
    void guard.send('SET', ['a3'], 10);
    expect(commands.at(-1)).toBe('SET');
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
    // a's probe (EXISTS a), then the SET to b: before, b was refused as well
    expect(waiting).toHaveLength(4);
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
