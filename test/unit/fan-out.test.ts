import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { monotonicClock } from '../../src/clock.js';
import type { RedisConnection } from '../../src/driver/connection.js';
import { fanOut } from '../../src/quorum/fan-out.js';

/** A scripted node: answers `reply` after `afterMs`, or fails. Tests fan-out logic only. */
function node(name: string, afterMs: number, reply: unknown): RedisConnection {
  return {
    name,
    close: async () => {},
    send: async () => {
      await delay(afterMs);
      if (reply instanceof Error) throw reply;
      return reply;
    },
  };
}

const judge = (reply: unknown) =>
  reply === 1 ? { vote: 'yes' as const } : { vote: 'no' as const };

describe('fanOut', () => {
  it('decides at quorum without waiting for a straggler, and still records it', async () => {
    const nodes = [node('a', 1, 1), node('b', 1, 1), node('c', 300, 1)];
    const started = performance.now();
    const round = fanOut(nodes, {
      timeoutMs: 1_000,
      clock: monotonicClock,
      run: (n) => n.send('X', [], 1_000),
      judge,
    });
    const decision = await round.decided;
    expect(performance.now() - started).toBeLessThan(150);
    expect(decision.quorum).toBe(true);
    expect(decision.results[2]).toBeUndefined();
    const all = await round.settled;
    expect(all.map((r) => r.outcome)).toEqual(['yes', 'yes', 'yes']);
  });

  it('decides no-quorum as soon as a majority is out of reach', async () => {
    const nodes = [node('a', 1, 0), node('b', 1, new Error('READONLY')), node('c', 300, 1)];
    const decision = await fanOut(nodes, {
      timeoutMs: 1_000,
      clock: monotonicClock,
      run: (n) => n.send('X', [], 1_000),
      judge,
    }).decided;
    expect(decision.quorum).toBe(false);
    expect(decision.results[1]).toMatchObject({ outcome: 'error', node: 'b' });
  });

  it('counts a node that misses the timeout as timed out and ignores its late reply', async () => {
    const nodes = [node('a', 1, 1), node('b', 200, 1)];
    const started = performance.now();
    const late: string[] = [];
    const round = fanOut(nodes, {
      timeoutMs: 50,
      clock: monotonicClock,
      run: (n) => n.send('X', [], 50),
      judge,
      onTimeout: (n) => late.push(n.name),
    });
    const all = await round.settled;
    expect(performance.now() - started).toBeLessThan(150);
    expect(all[1]).toEqual({ node: 'b', outcome: 'timeout', timeoutMs: 50 });
    expect((await round.decided).quorum).toBe(false);
    expect(late).toEqual(['b']);
    await delay(200);
    expect(all[1]?.outcome).toBe('timeout');
  });

  it('turns a throwing judge into an error vote', async () => {
    const round = fanOut([node('a', 0, 'junk')], {
      timeoutMs: 100,
      clock: monotonicClock,
      run: (n) => n.send('X', [], 100),
      judge: () => {
        throw new Error('unexpected reply');
      },
    });
    const [result] = await round.settled;
    expect(result).toMatchObject({ outcome: 'error' });
  });

  describe('settleEarly', () => {
    const silent = (name: string): RedisConnection => ({
      name,
      close: async () => {},
      send: () => new Promise(() => {}),
    });
    const run = (n: RedisConnection) => n.send('X', [], 1_000);

    it('settles at afterMs with the silent nodes timed out, when the results so far are accepted', async () => {
      const late: string[] = [];
      const seen: string[][] = [];
      const round = fanOut([node('a', 0, 1), node('b', 0, 1), silent('c')], {
        timeoutMs: 60_000,
        clock: monotonicClock,
        run,
        judge,
        onTimeout: (n) => late.push(n.name),
        settleEarly: {
          afterMs: 30,
          accept: (soFar) => {
            seen.push(soFar.map((r) => r.outcome));
            return true;
          },
        },
      });
      const all = await round.settled; // would take a minute without the early settle
      expect(all[2]).toEqual({ node: 'c', outcome: 'timeout', timeoutMs: 30 });
      expect(seen).toEqual([['yes', 'yes', 'timeout']]);
      expect(late).toEqual([]); // the node is marked stalled only at the full timeout
      expect((await round.decided).results[2]).toBeUndefined(); // the live results wait on
    });

    it('keeps waiting for the full timeout when the results so far are refused', async () => {
      const late: string[] = [];
      const round = fanOut([node('a', 0, 1), silent('b'), silent('c')], {
        timeoutMs: 80,
        clock: monotonicClock,
        run,
        judge,
        onTimeout: (n) => late.push(n.name),
        settleEarly: { afterMs: 10, accept: () => false },
      });
      const all = await round.settled;
      expect(all.map((r) => r.outcome)).toEqual(['yes', 'timeout', 'timeout']);
      expect(all[1]).toMatchObject({ timeoutMs: 80 });
      expect(late).toEqual(['b', 'c']);
    });

    it('settles as soon as a verdict that comes after afterMs is accepted', async () => {
      const round = fanOut([node('a', 0, 1), node('b', 60, 1), silent('c')], {
        timeoutMs: 60_000,
        clock: monotonicClock,
        run,
        judge,
        settleEarly: { afterMs: 10, accept: (soFar) => soFar[1]?.outcome === 'yes' },
      });
      const all = await round.settled;
      expect(all.map((r) => r.outcome)).toEqual(['yes', 'yes', 'timeout']);
    });

    it('gives the results when asked for them only after they all came', async () => {
      const round = fanOut([node('a', 0, 1)], {
        timeoutMs: 100,
        clock: monotonicClock,
        run,
        judge,
      });
      await round.decided;
      expect((await round.settled).map((r) => r.outcome)).toEqual(['yes']);
    });
  });
});
