import type { Clock } from '../clock.js';
import { defaultNodeTimeoutMs, type LockerSettings } from '../config/options.js';
import type { StallGuard } from '../driver/stall-guard.js';
import { type FanOut, fanOut, type Judgement } from '../quorum/fan-out.js';

/** A locker's nodes, with what it takes to send them a request. */
export interface NodeSet {
  readonly nodes: readonly StallGuard[];
  readonly settings: LockerSettings;
  readonly clock: Clock;
}

/** The per-node timeout for a lease of `ttlMs`. */
export function nodeTimeoutFor(context: NodeSet, ttlMs: number): number {
  return context.settings.nodeTimeoutMs ?? defaultNodeTimeoutMs(ttlMs);
}

/** A node's part in {@link askEveryNode}: what to send it, given its per-node timeout. */
type NodeRequest<T> = (node: StallGuard, timeoutMs: number, index: number) => Promise<T>;

/**
 * Sends one request to every node at once, each with the per-node timeout for a lease of
 * `ttlMs`; a node that lets it outlive the timeout gets no new work until it answers. A reply
 * of 1 counts as yes (what the compare-and-act scripts return) unless `judge` says otherwise;
 * `quorum` yes votes decide (a majority unless told).
 */
export function askEveryNode<T>(
  context: NodeSet,
  ttlMs: number,
  request: NodeRequest<T>,
  judge: (reply: T) => Judgement = oneIsYes,
  quorum?: number,
): FanOut {
  const timeoutMs = nodeTimeoutFor(context, ttlMs);
  return fanOut(context.nodes, {
    timeoutMs,
    clock: context.clock,
    run: (node, index) => request(node, timeoutMs, index),
    judge,
    onTimeout: markStalled,
    ...(quorum === undefined ? {} : { quorum }),
  });
}

/** A node that let a request outlive its timeout gets no new work until it answers. */
function markStalled(node: StallGuard): void {
  node.markStalled();
}

function oneIsYes(reply: unknown): Judgement {
  return reply === 1 ? YES : NO;
}

const YES: Judgement = Object.freeze({ vote: 'yes' });
const NO: Judgement = Object.freeze({ vote: 'no' });
