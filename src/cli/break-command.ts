import type { ReleaseResult } from '../engine/contract.js';
import type { ForcedAction, NodeForceRelease } from '../engine/events.js';
import type { Locker } from '../locker.js';
import { EXIT } from './exit-codes.js';
import { type LockStatus, nodeFailure } from './status-command.js';
import type { NodeProblem } from './unreachable.js';

/** One node's part in `distlock break`, as `--json` prints it. */
export interface NodeBreak {
  readonly node: string;
  readonly action: ForcedAction;
  /** Why the node failed. */
  readonly error?: string;
  /** The kind of `error`: `down`, `timeout`, `tls`, `auth` or `other`. */
  readonly problem?: NodeProblem;
}

/** What `distlock break --yes` reports: `Locker.forceRelease`'s result, in JSON terms. */
export interface BreakReport {
  readonly resource: string;
  readonly result: ReleaseResult;
  readonly handedOver: boolean;
  readonly nodes: readonly NodeBreak[];
}

/** Exit code of `distlock break --yes`: 0 broken, 1 nothing to break, 69 too few nodes answered. */
export const BREAK_EXIT: Record<ReleaseResult, number> = {
  released: 0,
  'not-held': EXIT.free,
  failed: EXIT.unavailable,
};

/** Breaks the lock on `resource` (`Locker.forceRelease`), each node given `timeoutMs`. */
export async function breakLock(
  locker: Locker,
  resource: string,
  timeoutMs: number,
): Promise<BreakReport> {
  const { result, handedOver, nodes } = await locker.forceRelease(resource, { timeoutMs });
  return { resource, result, handedOver, nodes: nodes.map(nodeBreak) };
}

/** Human-readable lines for {@link breakLock}'s report. */
export function formatBreak({ resource, result, handedOver, nodes }: BreakReport): string[] {
  const ended = nodes.filter((n) => n.action === 'deleted' || n.action === 'handed-over').length;
  const on = `deleted on ${ended} of ${nodes.length} node(s)`;
  const headline =
    result === 'released'
      ? `broken (${on}${handedOver ? ', handed to the first waiter' : ''})`
      : result === 'not-held'
        ? 'not held: nothing to break'
        : `unknown: too few nodes answered (${on})`;
  const lines = [`${resource}: ${headline}`];
  for (const n of nodes)
    lines.push(`  ${n.node}  ${ACTION[n.action]}${n.error ? `: ${n.error}` : ''}`);
  return lines;
}

const ACTION: Record<ForcedAction, string> = {
  deleted: 'deleted',
  'handed-over': 'deleted, handed to the first waiter',
  absent: 'free, nothing to delete',
  failed: 'failed',
};

/** What `distlock break` without `--yes` would do, judging by the lock's status. */
export function plannedBreak({ resource, heldOn, waiters, nodes }: LockStatus): string {
  if (heldOn === 0) return `"${resource}" is not locked on any node read: nothing to break`;
  const next = waiters > 0 ? `, handing it to the first of ${waiters} waiter(s)` : '';
  return (
    `would delete the lock on "${resource}" from the ${heldOn} of ${nodes.length} node(s) ` +
    `that hold it${next}; its holder learns of it at its next extension`
  );
}

function nodeBreak({ node, action, error }: NodeForceRelease): NodeBreak {
  return error ? { node, action, ...nodeFailure(error) } : { node, action };
}
