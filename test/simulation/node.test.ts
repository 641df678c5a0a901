/**
 * What the differential test cannot compare with one redis-server: a node's restart, its
 * subscribers, its two clocks, and the replies as a RedisConnection hands them to the engine.
 */
import { describe, expect, it } from 'vitest';
import { textOf } from '../../src/testing/in-memory/bytes.js';
import { SimulatedRedisNode } from '../../src/testing/in-memory/node.js';
import { toConnectionValue } from '../../src/testing/in-memory/reply.js';

function node(name = 'n1') {
  const clock = { now: 1_700_000_000_000_000n };
  return { clock, node: new SimulatedRedisNode({ name, clockUs: () => clock.now }) };
}

describe('SimulatedRedisNode', () => {
  it('restarts with a new run_id, without its scripts, with or without its keys', () => {
    const { node: n } = node();
    const before = n.runId;
    n.send('SET', ['k', 'v']);
    const sha = n.send('SCRIPT', ['LOAD', 'return 1']);
    n.restart({ persistence: true });
    expect(n.runId).not.toBe(before);
    expect(n.runId).toMatch(/^[0-9a-f]{40}$/);
    expect(n.send('GET', ['k'])).toEqual({ kind: 'bulk', value: 'v' });
    expect(n.send('EVALSHA', [sha.kind === 'bulk' ? sha.value : '', 0])).toEqual({
      kind: 'error',
      value: 'NOSCRIPT No matching script. Please use EVAL.',
    });
    n.restart({ persistence: false });
    expect(n.send('GET', ['k'])).toEqual({ kind: 'nil' });
  });

  it('promotes a replica in its place: another server, with the keys the replica had', () => {
    const { node: n } = node();
    const before = n.runId;
    n.send('SET', ['kept', 'v', 'PX', 60_000]);
    n.send('ZADD', ['line', 1, 'a']);
    n.send('HSET', ['h', 'f', '1']);
    const replica = n.replicate();
    n.send('SET', ['lost', 'v']);
    n.send('ZADD', ['line', 2, 'b']);
    n.send('HSET', ['h', 'f', '2']);
    n.promote(replica);
    expect(n.runId).not.toBe(before);
    expect(n.send('GET', ['lost'])).toEqual({ kind: 'nil' });
    expect(n.send('GET', ['kept'])).toEqual({ kind: 'bulk', value: 'v' });
    expect(n.send('PTTL', ['kept'])).toEqual({ kind: 'integer', value: 60_000n });
    expect(n.send('ZCARD', ['line'])).toEqual({ kind: 'integer', value: 1n });
    expect(n.send('HGET', ['h', 'f'])).toEqual({ kind: 'bulk', value: '1' });
    n.send('ZADD', ['line', 3, 'c']); // the promoted keys change apart from the replica's
    n.promote(replica);
    expect(n.send('ZCARD', ['line'])).toEqual({ kind: 'integer', value: 1n });
  });

  it('names itself in INFO by a run_id that two nodes never share', () => {
    const [a, b] = [node('a').node, node('b').node];
    const info = (n: SimulatedRedisNode) => String(toConnectionValue(n.send('INFO')));
    expect(info(a)).toContain(`run_id:${a.runId}\r\n`);
    expect(a.runId).not.toBe(b.runId);
  });

  it('delivers PUBLISH to its subscribers at once, and counts them', () => {
    const { node: n } = node();
    const heard: string[] = [];
    const stop = n.subscribe('wake', (channel, message) => heard.push(`${channel} ${message}`));
    expect(n.send('EVAL', ["return redis.call('PUBLISH', 'wake', '7')", 0])).toEqual({
      kind: 'integer',
      value: 1n,
    });
    stop();
    expect(n.send('PUBLISH', ['wake', '8'])).toEqual({ kind: 'integer', value: 0n });
    expect(heard).toEqual(['wake 7']);
  });

  it('expires keys and answers TIME by its own clock, which may jump back', () => {
    const { clock, node: n } = node();
    n.send('SET', ['k', 'v', 'PX', 10]);
    clock.now += 10_999n;
    expect(n.send('PTTL', ['k'])).toEqual({ kind: 'integer', value: 0n });
    clock.now += 1n;
    expect(n.send('GET', ['k'])).toEqual({ kind: 'nil' });
    clock.now -= 5_000_000n;
    expect(toConnectionValue(n.send('TIME'))).toEqual(['1699999995', '11000']);
  });

  it('takes text as UTF-8 and hands replies over as a RedisConnection does', () => {
    const { node: n } = node();
    n.send('SET', ['clé', 'été']);
    expect(toConnectionValue(n.send('GET', ['clé']))).toBe('été');
    expect(n.send('EVAL', ['return #ARGV[1]', 0, 'é'])).toEqual({ kind: 'integer', value: 2n });
    expect(toConnectionValue(n.send('EVAL', ['return {1, false, ARGV[1]}', 0, 'x']))).toEqual([
      1,
      null,
      'x',
    ]);
    const error = toConnectionValue(n.send('INCR', ['clé']));
    expect(error).toBeInstanceOf(Error);
    expect(textOf((error as Error).message)).toBe('ERR value is not an integer or out of range');
  });

  it('says what it does not model rather than answering wrongly', () => {
    const { node: n } = node();
    expect(n.send('WAIT', [1, 100])).toEqual({
      kind: 'error',
      value: "ERR distlock's simulated node does not model WAIT (replicas)",
    });
    expect(n.send('EVAL', ['return bit.band(1, 3)', 0])).toMatchObject({
      kind: 'error',
      value: expect.stringContaining('does not model bit.band'),
    });
  });
});
