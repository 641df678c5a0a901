/**
 * Keys that this locker found held by another in the last second: a worker that releases a
 * lock others wait for, and asks for it again, finds it handed over, and had better join the
 * line at once. Bounded: the oldest entries go first.
 */
export class BusyKeys {
  readonly #seenAt = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  mark(key: string): void {
    this.#seenAt.delete(key); // re-inserted last: the map stays in age order
    this.#seenAt.set(key, this.#now());
    if (this.#seenAt.size <= BUSY_KEYS_KEPT) return;
    const [oldest] = this.#seenAt.keys();
    if (oldest !== undefined) this.#seenAt.delete(oldest);
  }

  has(key: string): boolean {
    const seenAt = this.#seenAt.get(key);
    if (seenAt === undefined) return false;
    if (this.#now() - seenAt < BUSY_FOR_MS) return true;
    this.#seenAt.delete(key);
    return false;
  }
}

const BUSY_FOR_MS = 1_000;
const BUSY_KEYS_KEPT = 1_000;
