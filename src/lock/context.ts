import type { Clock } from '../clock.js';
import { NotSentError } from '../driver/connection.js';
import type { StallGuard } from '../driver/stall-guard.js';
import { queueKeys, releaseChannel } from '../keys.js';
import type { LockerSettings } from '../options.js';
import { fanOut } from '../quorum/fan-out.js';
import type { NodeResult } from '../quorum/node-result.js';
import { defaultNodeTimeoutMs } from '../quorum/validity.js';
import { releaseScript } from '../scripts/release.js';
import { runScript } from '../scripts/script.js';
import type { LockerEmitter } from './events.js';
import type { HandOff } from './hand-off.js';
import type { NodeIdentities } from './node-identity.js';
import type { Shutdown } from './shutdown.js';

/**
 * The longest a locker waits for connections that are still being opened (its first
 * operation waits for them; later ones do not).
 */
export const CONNECT_WAIT_MS = 2_000;

/** What every lock operation of one locker shares. */
export interface LockContext {
  readonly nodes: readonly StallGuard[];
  readonly settings: LockerSettings;
  readonly clock: Clock;
  readonly events: LockerEmitter;
  readonly handOff: HandOff;
  /** Stops waits and ends held locks when the locker closes. */
  readonly shutdown: Shutdown;
  /** Which server each node is: no server may count twice towards a majority. */
  readonly identities: NodeIdentities;
  /**
   * Resolves once the connections opened at construction are ready (or gave up); undefined
   * when that already happened.
   */
  readonly connected: () => Promise<void> | undefined;
}

/** The per-node timeout for a lease of `ttlMs`. */
export function nodeTimeoutFor(context: LockContext, ttlMs: number): number {
  return context.settings.nodeTimeoutMs ?? defaultNodeTimeoutMs(ttlMs);
}

/** Which key of ours to delete, and how. */
export interface DeleteRequest {
  readonly key: string;
  readonly token: string;
  readonly ttlMs: number;
  /**
   * Each node's answer to the acquisition round: nodes that cannot hold our token are
   * skipped. All nodes when absent.
   */
  readonly acquireResults?: readonly (NodeResult | undefined)[];
  /**
   * Wake waiters: true for a real release (or a lost lease), false for undoing a failed
   * attempt, which leaves every node as it was and must not wake anyone (least of all the
   * attempt's own waiter).
   */
  readonly announce: boolean;
}

/**
 * Compare-and-deletes our key on every node that may hold our token, judged by the answers to
 * the acquisition round; the others count as "no" without any I/O. Deletes are always sent,
 * also to a node that stopped answering, so that a `SET` queued there is undone when it
 * wakes up. Used by release and to undo failed acquisitions and extensions.
 */
export function deleteIfOwned(context: LockContext, request: DeleteRequest) {
  const { key, token, ttlMs, acquireResults, announce } = request;
  const timeoutMs = nodeTimeoutFor(context, ttlMs);
  return fanOut(context.nodes, {
    timeoutMs,
    clock: context.clock,
    run: (node, index) =>
      acquireResults === undefined || mayHoldToken(acquireResults[index])
        ? runScript(
            node.forced,
            releaseScript,
            [key, queueKeys(key).queue],
            [token, releaseChannel(key), announce ? '1' : '0'],
            timeoutMs,
          )
        : Promise.resolve(0),
    judge: (deleted) => (deleted === 1 ? { vote: 'yes' } : { vote: 'no' }),
    onTimeout: markStalled,
  });
}

/** Stops sending work to a node that let a request outlive its timeout. */
export function markStalled(node: StallGuard): void {
  node.markStalled();
}

/**
 * Whether a node may hold our token after an acquisition round: not if it refused (held by
 * another) or the command never reached it. A node that is still silent may.
 */
export function mayHoldToken(result: NodeResult | undefined): boolean {
  if (result?.outcome === 'no') return false;
  return !(result?.outcome === 'error' && result.error instanceof NotSentError);
}
