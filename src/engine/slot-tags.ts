import { keySlot } from '../driver/libraries.js';

/** Hash slots of a Redis Cluster. */
const SLOTS = 16_384;

/** The tag found so far for each slot. */
const tags: (string | undefined)[] = new Array(SLOTS);
/** The next candidate: tags are tried in order 0, 1, ... z, 10, ... (base 36). */
let next = 0;

/**
 * A short string (at most 4 characters, `[0-9a-z]`) that Redis Cluster hashes to `slot`: the
 * hash tag of a channel that must live in that slot. Found by trying strings in order, and
 * remembering every slot met on the way, so that all the lookups of a process together try
 * about 170,000 strings at most (a few tens of ms), whatever slots they ask for.
 */
export function slotTag(slot: number): string {
  let tag = tags[slot];
  while (tag === undefined) {
    const candidate = (next++).toString(36);
    const found = keySlot(candidate);
    tags[found] ??= candidate;
    if (found === slot) tag = tags[slot];
  }
  return tag;
}

/** The hash slot of `key` (its hash tag's, when it has one). */
export function slotOf(key: string): number {
  return keySlot(key);
}
