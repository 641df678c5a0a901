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

  it('lets a tick go unrun when every open client was still running an earlier job then', () => {
    // c0 alone is open; its job for tick 5 runs from 5.0 s to 6.2 s: tick 6 is skipped.
    const long = { ...run(0, 5), reportedAt: 6.2 * SECOND };
    const onlyC0 = () => [0];
    expect(tickViolations([long, run(0, 7)], 4.5 * SECOND, 7.5 * SECOND, onlyC0)).toEqual([]);
    // With c1 open too and idle, tick 6 had to run somewhere.
    const both = () => [0, 1];
    expect(tickViolations([long, run(0, 7)], 4.5 * SECOND, 7.5 * SECOND, both)).toEqual([
      expect.stringContaining('00:00:06.000Z ran nowhere'),
    ]);
    // A tick handled before the next fire excuses nothing.
    const short = { ...run(0, 5), reportedAt: 5.5 * SECOND };
    expect(tickViolations([short, run(0, 7)], 4.5 * SECOND, 7.5 * SECOND, onlyC0)).toHaveLength(1);
  });

  it('counts a client busy until its tick is reported, not only while the job runs', () => {
    // Seed 862185860: the job for tick 13 ended at 13.987 s, but its lock had been lost and
    // letting it go took until 14.002 s, when the outcome was reported: the fire at 14 s was
    // skipped, as the schedule documents.
    const lost = run(1, 13, 'lost');
    const onlyC1 = () => [1];
    const reported = (at: number) => ({ ...lost, reportedAt: at * SECOND });
    const found = (at: number) =>
      tickViolations([reported(at), run(1, 15)], 12.5 * SECOND, 15.5 * SECOND, onlyC1);
    expect(found(14.002)).toEqual([]);
    // Seed 863049070: reported in the very millisecond of the next fire, which it held back.
    expect(found(14)).toEqual([]);
    expect(found(13.99)).toEqual([expect.stringContaining('00:00:14.000Z ran nowhere')]);
  });
});
