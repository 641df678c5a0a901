/**
 * The shrinker (simulation/shrink.ts) against failures whose cause the test knows: it must
 * switch off every fault the failure does not need, and keep the ones it does.
 */
import { describe, expect, it } from 'vitest';
import {
  FAULT_KINDS,
  FULL_SHAPE,
  type ScheduleShape,
  WORKLOAD_MS,
} from '../../simulation/shape.js';
import { shrink } from '../../simulation/shrink.js';

describe('shrinking a failing schedule', () => {
  it('keeps only the faults, the workload and the clients the failure needs', async () => {
    const tried: ScheduleShape[] = [];
    // Fails while resets and late deliveries both happen, with 3 clients or more and at least 1 s of workload.
    const fails = async (shape: ScheduleShape) => {
      tried.push(shape);
      return (
        !shape.off.has('reset') &&
        !shape.off.has('late-delivery') &&
        (shape.clients ?? 4) >= 3 &&
        shape.workloadMs >= 1_000
      );
    };
    const shrunk = await shrink(fails, FULL_SHAPE, 4);
    expect([...shrunk.off].sort()).toEqual(
      FAULT_KINDS.filter((kind) => kind !== 'reset' && kind !== 'late-delivery').sort(),
    );
    expect(shrunk.workloadMs).toBe(1_000);
    expect(shrunk.clients).toBe(3);
    expect(await fails(shrunk)).toBe(true);
    expect(tried.length).toBeLessThan(40);
  });

  it('gives back the full shape when every fault matters', async () => {
    const shrunk = await shrink(
      async (shape) =>
        shape.off.size === 0 && shape.workloadMs === WORKLOAD_MS && shape.clients === undefined,
    );
    expect(shrunk).toBe(FULL_SHAPE);
  });
});
