/** What a Redis node was doing: serving, stopped by SIGSTOP, or gone after `kill -9`. */
export type NodeState = 'up' | 'paused' | 'killed';

/** One interval of a node's state, in ms from the demo's start. */
export interface NodeSegment {
  readonly state: NodeState;
  readonly fromMs: number;
  readonly toMs: number;
}

/** A node's states over the whole run, one segment after the other. */
export interface NodeLane {
  readonly name: string;
  readonly segments: readonly NodeSegment[];
}

/**
 * Records when each node changed state, so the report can draw one lane per node. Every node
 * is `up` from 0 until told otherwise.
 *
 * @example
 * ```ts
 * const timeline = new NodeTimeline(['node 1', 'node 2']);
 * timeline.set(0, 'killed', 2_500);
 * timeline.lanes(8_000); // node 1: up 0–2500, killed 2500–8000; node 2: up 0–8000
 * ```
 */
export class NodeTimeline {
  readonly #changes: { state: NodeState; atMs: number }[][];

  constructor(private readonly names: readonly string[]) {
    this.#changes = names.map(() => [{ state: 'up', atMs: 0 }]);
  }

  /** Node `index` (0-based) entered `state` at `atMs`. */
  set(index: number, state: NodeState, atMs: number): void {
    const changes = this.#changes[index];
    if (!changes)
      throw new RangeError(`Expected a node index below ${this.names.length}, got ${index}`);
    changes.push({ state, atMs });
  }

  /** Each node's segments up to `endMs`, the end of the run. */
  lanes(endMs: number): NodeLane[] {
    return this.names.map((name, i) => {
      const changes = this.#changes[i] ?? [];
      const segments = changes.map((change, j) => ({
        state: change.state,
        fromMs: change.atMs,
        toMs: Math.max(change.atMs, changes[j + 1]?.atMs ?? endMs),
      }));
      return { name, segments };
    });
  }
}
