/**
 * The keyspace of one simulated node: strings, sorted sets and hashes, each key with an
 * optional expiry (absolute, in ms of the node's own clock). Expiry is lazy, as Redis's is
 * on access: a key whose time has passed is gone the moment anything looks at it. A key
 * expires once the clock is past its time (`now > expiry`), so in its last millisecond it
 * still exists while PTTL says 0, as in Redis.
 */
import { ReplyError, WRONGTYPE } from './reply.js';
import type { SortedSet } from './sorted-set.js';

export type Value =
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'zset'; readonly value: SortedSet }
  | { readonly type: 'hash'; readonly value: Map<string, string> };

/** A value that changes apart from `value`. */
function copyOf(value: Value): Value {
  if (value.type === 'zset') return { type: 'zset', value: value.value.copy() };
  if (value.type === 'hash') return { type: 'hash', value: new Map(value.value) };
  return value;
}

export interface Entry {
  value: Value;
  /** Absolute expiry in ms, or undefined for none. */
  expiresAt: bigint | undefined;
}

export class Keyspace {
  readonly #entries = new Map<string, Entry>();
  readonly #nowMs: () => bigint;

  /** `nowMs`: the node's clock, in ms since the epoch. */
  constructor(nowMs: () => bigint) {
    this.#nowMs = nowMs;
  }

  /** The live value at `key`, deleting it first if it expired. */
  get(key: string): Value | undefined {
    return this.#live(key)?.value;
  }

  /** Stores `value` at `key`, without expiry unless `keepExpiry`. */
  set(key: string, value: Value, keepExpiry = false): void {
    const expiresAt = keepExpiry ? this.#live(key)?.expiresAt : undefined;
    this.#entries.set(key, { value, expiresAt });
  }

  delete(key: string): boolean {
    return this.#live(key) !== undefined && this.#entries.delete(key);
  }

  /** The expiry of a live key: undefined without one, null when there is no key. */
  expiresAt(key: string): bigint | undefined | null {
    const entry = this.#live(key);
    return entry === undefined ? null : entry.expiresAt;
  }

  /** Sets (or, with undefined, removes) the expiry of a live key. */
  setExpiry(key: string, expiresAt: bigint | undefined): void {
    const entry = this.#live(key);
    if (entry) entry.expiresAt = expiresAt;
  }

  /**
   * Every live key, in the order they were created. Like Redis 7.0's KEYS, it skips expired
   * keys without deleting them (should the clock go back, they live again).
   */
  keys(): string[] {
    const now = this.#nowMs();
    return [...this.#entries]
      .filter(([, entry]) => entry.expiresAt === undefined || now <= entry.expiresAt)
      .map(([key]) => key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** A copy of every entry, expired or not, as a replica holds them. */
  copy(): ReadonlyMap<string, Readonly<Entry>> {
    const copy = new Map<string, Entry>();
    for (const [key, { value, expiresAt }] of this.#entries) {
      copy.set(key, { value: copyOf(value), expiresAt });
    }
    return copy;
  }

  /** Replaces every entry with those of `copy` (a replica promoted in this one's place). */
  replaceWith(copy: ReadonlyMap<string, Readonly<Entry>>): void {
    this.#entries.clear();
    for (const [key, { value, expiresAt }] of copy) {
      this.#entries.set(key, { value: copyOf(value), expiresAt });
    }
  }

  /** The string at `key`, undefined when none; WRONGTYPE for another type. */
  string(key: string): string | undefined {
    const value = this.#ofType(key, 'string');
    return value?.type === 'string' ? value.value : undefined;
  }

  zset(key: string): SortedSet | undefined {
    const value = this.#ofType(key, 'zset');
    return value?.type === 'zset' ? value.value : undefined;
  }

  hash(key: string): Map<string, string> | undefined {
    const value = this.#ofType(key, 'hash');
    return value?.type === 'hash' ? value.value : undefined;
  }

  /** Deletes `key` if its collection is empty (Redis never keeps an empty one). */
  dropIfEmpty(key: string): void {
    const value = this.get(key);
    if (value?.type === 'zset' && value.value.size === 0) this.delete(key);
    if (value?.type === 'hash' && value.value.size === 0) this.delete(key);
  }

  #ofType(key: string, type: Value['type']): Value | undefined {
    const value = this.get(key);
    if (value !== undefined && value.type !== type) throw new ReplyError(WRONGTYPE);
    return value;
  }

  #live(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry?.expiresAt !== undefined && this.#nowMs() > entry.expiresAt) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }
}
