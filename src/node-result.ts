/**
 * What one Redis node answered to one operation. Failed votes are data: they are kept and
 * reported, never swallowed.
 */
export type NodeResult =
  /**
   * The node applied the operation (set, extended or deleted our key). `fence` is the node's
   * fence counter after a fenced acquisition.
   */
  | {
      readonly node: string;
      readonly outcome: 'yes';
      readonly latencyMs: number;
      readonly fence?: bigint;
    }
  /**
   * The node refused: the key is held by another token (acquire) or is not ours any more
   * (extend, release). `holderRemainingMs` is the other holder's PTTL when the node said so.
   */
  | {
      readonly node: string;
      readonly outcome: 'no';
      readonly latencyMs: number;
      readonly holderRemainingMs?: number;
    }
  /** No answer within the per-node timeout (paused, black-holed or overloaded node). */
  | { readonly node: string; readonly outcome: 'timeout'; readonly timeoutMs: number }
  /** The node answered with an error, or the connection failed. */
  | { readonly node: string; readonly outcome: 'error'; readonly error: Error };

/** Outcome kinds of {@link NodeResult}. */
export type NodeOutcome = NodeResult['outcome'];
