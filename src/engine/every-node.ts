import type { Clock } from '../clock.js';
import { defaultNodeTimeoutMs, type LockerSettings } from '../config/options.js';
import type { StallGuard } from '../driver/stall-guard.js';
import { type FanOut, type FanOutOptions, fanOut, type Judgement } from '../quorum/fan-out.js';

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
 * The per-node timeout of a release: no validity is at stake, only whether the nodes can
 * tell that they deleted the key, so it is the lease's per-node timeout but at least
 * {@link RELEASE_NODE_TIMEOUT_MS} (never more than the TTL: by then the key expired anyway).
 * A node busy with many other requests still answers within it.
 */
export function releaseTimeoutFor(context: NodeSet, ttlMs: number): number {
  return Math.max(nodeTimeoutFor(context, ttlMs), Math.min(RELEASE_NODE_TIMEOUT_MS, ttlMs));
}

/** The least per-node timeout of a release (see {@link releaseTimeoutFor}). */
export const RELEASE_NODE_TIMEOUT_MS = 1_000;

/**
 * Sends one request to every node at once, each with the per-node timeout `timeoutMs` (see
 * {@link nodeTimeoutFor}); a node that lets it outlive the timeout gets no new work until it
 * answers. A reply of 1 counts as yes (what the compare-and-act scripts return) unless
 * `how.judge` says otherwise; `how.quorum` yes votes decide (a majority unless told).
 */
export function askEveryNode<T>(
  context: NodeSet,
  timeoutMs: number,
  request: NodeRequest<T>,
  how: Partial<Pick<FanOutOptions<StallGuard, T>, 'judge' | 'quorum' | 'settleEarly'>> = {},
): FanOut {
  return fanOut(context.nodes, {
    timeoutMs,
    clock: context.clock,
    run: request,
    judge: how.judge ?? (oneIsYes as (reply: T) => Judgement),
    onTimeout: markStalled,
    // Absent options as `undefined` rather than spread in: an object of one shape, built
    // without a copy, on every operation.
    quorum: how.quorum,
    settleEarly: how.settleEarly,
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
