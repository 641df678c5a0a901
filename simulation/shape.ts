/**
 * What a schedule may contain beyond its seed: which kinds of fault are switched off, how
 * long the workload runs, how many clients take part. The full shape (nothing off, the
 * longest workload, the clients the seed draws) is what exploration runs; the shrinker
 * (shrink.ts) looks for a smaller shape under which a failing seed still fails, and the
 * replay command names it.
 *
 * A fault that is off still draws its random numbers, and only its effect is skipped, so a
 * shape that switches one fault off replays the same schedule without that fault for as
 * long as the histories do not diverge.
 */

/** Every kind of fault a schedule can inject. */
export const FAULT_KINDS = [
  'request-loss',
  'reply-loss',
  'reset',
  'late-delivery',
  'resend',
  'slow',
  'node-pause',
  'crash',
  'failover',
  'clock-jump',
  'drift',
  'client-pause',
  'close',
  'slot-move',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * What a schedule concentrates on. Most explore everything (`mixed`). A quarter, drawn by
 * the seed, concentrate on `late-requests`: plain locks under contention on connections that
 * reset often, with orphaned and resent requests arriving long after the retries that
 * followed them, the rarest orderings of all. A sixth concentrate on `slow-replies`: short
 * leases under contention, with many replies just inside the per-node timeout, where the
 * time an acquisition took eats the validity. One in fourteen each:
 * - `line-order`: no faults at all, fair and plain waiters on one lock, short holds taken
 *   back at once and some that run out, so that the waiting line's promises can be checked
 *   (line-order.ts);
 * - `drift-edge`: every node's clock runs fast at the largest rate `driftFactor` allows, and
 *   clients poll with `waitMs: 0` every millisecond or two while holders use their lease to
 *   its last millisecond;
 * - `late-takes`: one node; an attempt's take and its undo after it, on a connection that
 *   resets, arrive again in order after a later attempt of the same acquisition took the lock;
 * - `slot-moves`: the first node is a Redis Cluster of two masters whose slots move between
 *   them (one key at a time, with `ASK`, `MOVED` and `TRYAGAIN` along the way) while the
 *   mix's workload and faults go on (see cluster.ts).
 * One in thirty-three, `late-leaders`: elections and a scheduled job on one node, whose client
 * library sends a command that a reset left unanswered again and answers from that copy,
 * while the first copy lands late, after a leader resigned or a tick's retry took it.
 * Never drawn, only asked for (`--focus`, and `npm test`), `faulty-minority`: 3 or 5 nodes,
 * every fault confined to a minority of them, so that the scheduled job must run every tick
 * while the faults go on, not only after them; and `lease-records`: the mix on 3 or 5 nodes,
 * its lockers on the default restart grace (the nodes' lease records, which every other
 * focus replaces with `restartGraceMs`), so that restarts and failovers meet that rule.
 */
export const FOCUSES = [
  'mixed',
  'late-requests',
  'slow-replies',
  'line-order',
  'drift-edge',
  'late-takes',
  'slot-moves',
  'late-leaders',
  'faulty-minority',
  'lease-records',
] as const;

export type Focus = (typeof FOCUSES)[number];

export interface ScheduleShape {
  /** The focus, when not the one the seed draws. */
  readonly focus?: Focus | undefined;
  /** Faults that do not happen. */
  readonly off: ReadonlySet<FaultKind>;
  /** How long clients keep starting acquisitions (virtual ms). */
  readonly workloadMs: number;
  /** How many clients, when fewer than the seed draws. */
  readonly clients?: number | undefined;
}

/** The longest workload; exploration runs it. */
export const WORKLOAD_MS = 4_000;

export const FULL_SHAPE: ScheduleShape = { off: new Set(), workloadMs: WORKLOAD_MS };

/** Whether `kind` may happen under `shape`. */
export function allows(shape: ScheduleShape, kind: FaultKind): boolean {
  return !shape.off.has(kind);
}

/** The command-line options that give `shape` (empty for the full one). */
export function shapeOptions(shape: ScheduleShape): string[] {
  const options: string[] = [];
  const off = FAULT_KINDS.filter((kind) => shape.off.has(kind));
  if (off.length > 0) options.push('--off', off.join(','));
  if (shape.workloadMs !== WORKLOAD_MS) options.push('--workload-ms', String(shape.workloadMs));
  if (shape.clients !== undefined) options.push('--clients', String(shape.clients));
  if (shape.focus !== undefined) options.push('--focus', shape.focus);
  return options;
}

/** Parses `--focus`, naming what it expects. */
export function parseFocus(name: string | undefined): Focus | undefined {
  if (name === undefined || (FOCUSES as readonly string[]).includes(name)) return name as Focus;
  throw new Error(`Unknown focus "${name}" in --focus: expected ${FOCUSES.join(' or ')}`);
}

/** Parses `--off`'s list of fault kinds, naming a kind it does not know. */
export function parseFaultKinds(list: string): Set<FaultKind> {
  const kinds = new Set<FaultKind>();
  for (const name of list.split(',').filter(Boolean)) {
    if (!(FAULT_KINDS as readonly string[]).includes(name)) {
      throw new Error(`Unknown fault kind "${name}" in --off: expected ${FAULT_KINDS.join(', ')}`);
    }
    kinds.add(name as FaultKind);
  }
  return kinds;
}
