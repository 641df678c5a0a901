/**
 * The fenced store of a schedule: one more simulated node, standing for the durable storage
 * that fencing protects, so it never crashes (its links still lose, delay and reset). Holders
 * of fenced locks write to it with the real `fencedWrite`; it records each write in the order
 * it ran them, for the oracle (`storeViolations`).
 */

import { WorldNode } from './network.js';
import type { StoreWrite } from './oracle.js';
import type { Random } from './random.js';

/** The store key a fenced holder of `resource` writes. */
export function storeKey(resource: string): string {
  return `store:${resource}`;
}

export class FencedStore {
  readonly world: WorldNode;
  readonly #writes: StoreWrite[] = [];

  constructor(random: Random) {
    this.world = new WorldNode('store:6379', random, 0);
    this.world.observe((argv, reply) => {
      // EVALSHA|EVAL <script> 1 <key> <fence> <value>: fencedWrite, answered 1 or 0.
      const [command, , keyCount, key, fence, value] = argv;
      const script = command === 'EVALSHA' || command === 'EVAL';
      if (!script || keyCount !== '1' || value === undefined || key === undefined) return;
      if (!key.startsWith('store:') || reply.kind !== 'integer') return;
      this.#writes.push({ key, fence: BigInt(fence ?? ''), applied: reply.value === 1n, value });
    });
  }

  /** Every write the store ran, in its order. */
  get writes(): readonly StoreWrite[] {
    return this.#writes;
  }
}
