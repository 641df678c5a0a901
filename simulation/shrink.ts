/**
 * Shrinks a failing schedule: keeps its seed and looks for a smaller shape (shape.ts) under
 * which it still fails: each kind of fault switched off in turn, the workload halved, fewer
 * clients; then the fault kinds once more, since a shorter run may need fewer. Greedy: a
 * change is kept when the schedule still fails with it. A few dozen schedules in all.
 */
import { FAULT_KINDS, FULL_SHAPE, type ScheduleShape } from './shape.js';

/** The shortest workload the shrinker tries (virtual ms). */
const SHORTEST_WORKLOAD_MS = 250;

/**
 * The smallest shape, starting from `shape`, under which `fails` still holds; `fails` runs
 * the schedule under a shape and tells whether the oracle found it wrong.
 */
export async function shrink(
  fails: (shape: ScheduleShape) => Promise<boolean>,
  shape: ScheduleShape = FULL_SHAPE,
  clients = 4,
): Promise<ScheduleShape> {
  let smallest = shape;
  const keepIfFails = async (candidate: ScheduleShape) => {
    const still = await fails(candidate);
    if (still) smallest = candidate;
    return still;
  };
  const switchOffFaults = async () => {
    for (const kind of FAULT_KINDS) {
      if (smallest.off.has(kind)) continue;
      await keepIfFails({ ...smallest, off: new Set([...smallest.off, kind]) });
    }
  };

  await switchOffFaults();
  const before = smallest;
  while (smallest.workloadMs / 2 >= SHORTEST_WORKLOAD_MS) {
    if (!(await keepIfFails({ ...smallest, workloadMs: smallest.workloadMs / 2 }))) break;
  }
  for (let fewer = 2; fewer < (smallest.clients ?? clients); fewer++) {
    if (await keepIfFails({ ...smallest, clients: fewer })) break;
  }
  if (smallest !== before) await switchOffFaults();
  return smallest;
}
