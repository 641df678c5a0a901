import { EventEmitter } from 'node:events';
import type { LockLostError } from '../errors.js';
import type { NodeResult } from '../node-result.js';
import type { ReleaseResult } from './contract.js';

/** What a {@link Locker} reports, per event. Tokens never appear in events. */
export interface LockerEvents {
  /**
   * A lock was acquired. `waitedMs` counts from the call to `acquire`; `owner` and `since`
   * (when the acquisition began, in the servers' time) as `inspect()` shows them, unless
   * the locker has `owner: false`.
   */
  acquired: [
    {
      resource: string;
      attempts: number;
      waitedMs: number;
      validityMs: number;
      nodes: readonly (NodeResult | undefined)[];
      owner?: string;
      since?: Date;
    },
  ];
  /** An attempt failed and another follows after `delayMs`. */
  retry: [
    {
      resource: string;
      attempt: number;
      delayMs: number;
      reason: 'busy' | 'unavailable' | 'expired';
      nodes: readonly NodeResult[];
    },
  ];
  /** A lease was extended; `validityMs` is the new validity. */
  extended: [{ resource: string; validityMs: number; nodes: readonly (NodeResult | undefined)[] }];
  /**
   * A lock was released (or failed to be). `nodes`: each node's answer when the outcome was
   * known, `undefined` for a node still silent then (on N nodes, a release is done once a
   * quorum, a majority for a lock, deleted the key; the others still get the delete).
   */
  released: [
    {
      resource: string;
      result: ReleaseResult;
      heldMs: number;
      nodes: readonly (NodeResult | undefined)[];
    },
  ];
  /** A held lock can no longer be proven valid; `owner` and `since` as in `acquired`. */
  lost: [{ resource: string; error: LockLostError; heldMs: number; owner?: string; since?: Date }];
  /**
   * `Locker.forceRelease` deleted a lock whoever held it (an operator's action), or tried to:
   * what it did on each node (what `forceRelease` resolves, see {@link ForceReleaseResult}).
   */
  forceReleased: [
    {
      resource: string;
      result: ReleaseResult;
      handedOver: boolean;
      nodes: readonly NodeForceRelease[];
    },
  ];
  /**
   * A node puts locks at risk. `EVICTION_RISK`: its eviction policy; `EVICTION_UNCHECKED`: its
   * policy cannot be read (INFO denied); `NODE_IDENTITY_CHANGED`: it is another server than
   * before (its `run_id` changed: a restart, a failover, a re-pointed name), which may have
   * lost the locks it held; `NODE_DUPLICATE`: it now reaches the same server as another node,
   * and does not vote while that lasts; `SHARDED_PUBSUB_UNAVAILABLE`: a Redis Cluster refused
   * `SSUBSCRIBE` or `SPUBLISH` (a server before Redis 7, an ACL user without them), so releases
   * wake waiters with `PUBLISH`, which every node of the cluster receives;
   * `WAKE_UPS_REPAIRED`: on a Redis Cluster, a waiter was handed a lock without its wake-up
   * message and the sharded channel had no subscriber on the slot's master (the slot moved
   * and the client did not subscribe again): the locker subscribed again;
   * `PUBSUB_UNAVAILABLE`: a node refused `SUBSCRIBE` (this locker's waiters poll instead of
   * being woken) or `PUBLISH` (this locker's releases wake no waiter), naming the ACL rule to
   * add (`+subscribe`, `+publish`, or the channels `&distlock:*`).
   */
  warning: [{ node: string; code: WarningCode; message: string }];
}

/**
 * What a forced release did on one node: `deleted` the lock (nobody waited), deleted it and
 * `handed-over` the lock to the first waiter in line (woken at once), found it `absent`, or
 * `failed` (then `error` says why; the node may still apply it later, see the docs).
 */
export type ForcedAction = 'deleted' | 'handed-over' | 'absent' | 'failed';

/** One node's part in {@link ForceReleaseResult}. */
export interface NodeForceRelease {
  readonly node: string;
  readonly action: ForcedAction;
  /** Why the node failed: its error, or a `NoReplyError` when it was silent. */
  readonly error?: Error;
}

/** What `Locker.forceRelease` did, also the payload of the `forceReleased` event. */
export interface ForceReleaseResult {
  readonly resource: string;
  /**
   * `released`: a quorum of nodes answered and at least one had the lock (it is no longer
   * held, or is now the first waiter's); `not-held`: a quorum answered and none had it;
   * `failed`: too few nodes answered to tell, and the lock may still be held.
   */
  readonly result: ReleaseResult;
  /** Whether the lock went to a waiter in line (on at least one node). */
  readonly handedOver: boolean;
  /** Each node's part, in the order the nodes were given. */
  readonly nodes: readonly NodeForceRelease[];
}

/** What a `warning` event is about (see {@link LockerEvents}). */
export type WarningCode =
  | 'EVICTION_RISK'
  | 'EVICTION_UNCHECKED'
  | 'FENCE_COUNTER_BEHIND'
  | 'NODE_IDENTITY_CHANGED'
  | 'NODE_DUPLICATE'
  | 'SHARDED_PUBSUB_UNAVAILABLE'
  | 'WAKE_UPS_REPAIRED'
  | 'PUBSUB_UNAVAILABLE';

/**
 * Reports a warning: a `warning` event, or, when nobody listens, a process warning
 * (`DistlockWarning`): never silent.
 */
export function warn(
  events: LockerEmitter,
  node: string,
  code: WarningCode,
  message: string,
): void {
  if (events.listenerCount('warning') > 0) {
    events.report('warning', () => ({ node, code, message }));
  } else {
    emitProcessWarning({ node, code, message });
  }
}

/** A warning as a process warning (`DistlockWarning`), as when nobody listens for it. */
export function emitProcessWarning({ node, code, message }: LockerEvents['warning'][0]): void {
  process.emitWarning(`${node}: ${message}`, { type: 'DistlockWarning', code });
}

/** Typed event emitter for {@link LockerEvents}. */
export class LockerEmitter extends EventEmitter<LockerEvents> {
  /**
   * Emits `name`, building its payload only when someone listens (the hot path pays nothing).
   * Listeners get a frozen snapshot of the per-node results: the engine's own array keeps
   * filling in as late nodes answer.
   */
  report<K extends keyof LockerEvents>(name: K, payload: () => LockerEvents[K][0]): void {
    if (this.listenerCount(name) === 0) return;
    try {
      const built = payload();
      if ('nodes' in built) built.nodes = Object.freeze([...built.nodes]) as typeof built.nodes;
      (this.emit as (event: K, arg: LockerEvents[K][0]) => boolean)(name, built);
    } catch (error) {
      // A throwing listener must not break a lock operation (or escape from one of our
      // timers) halfway: its error surfaces on its own, outside the lock's code path.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}
