/** The oracle of scheduled jobs (simulation/ticks.ts), on histories written by hand. */
import { describe, expect, it } from 'vitest';
import { type TickRun, tickViolations } from '../../simulation/ticks.js';

const SECOND = 1_000;

function run(client: number, tick: number, outcome: TickRun['outcome'] = 'ran'): TickRun {
  return { client, scheduledAt: tick * SECOND, outcome };
}

describe('scheduled ticks', () => {
  it('finds a tick that ran on two clients', () => {
    const found = tickViolations([run(0, 1), run(1, 1), run(1, 2)], 0, 0);
    expect(found).toEqual([expect.stringContaining('ran 2 times: c0 (ran), c1 (ran)')]);
  });

  it('lets a tick run twice when one of its runs was lost, as documented', () => {
    expect(tickViolations([run(0, 1, 'lost'), run(1, 1)], 0, 0)).toEqual([]);
  });

  it('finds a tick that ran nowhere once faults stopped, and only there', () => {
    const runs = [run(0, 5), run(1, 7)];
    const found = tickViolations(runs, 4.5 * SECOND, 7.5 * SECOND);
    expect(found).toEqual([expect.stringContaining('00:00:06.000Z ran nowhere')]);
    expect(tickViolations(runs, 6.5 * SECOND, 7.5 * SECOND)).toEqual([]);
  });
});
