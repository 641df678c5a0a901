import { Acquirer } from '../../engine/acquirer.js';
import type { LockContext } from '../../engine/context.js';
import { readWriteKey } from '../../keys.js';
import { readWriteKind } from './read-write-kind.js';

/**
 * A read-write lock: many readers at once, or one writer. Waiters are served in arrival
 * order: a reader waits only for a writer that holds the lock or arrived before it, so a
 * stream of readers cannot starve a writer, nor a stream of writers the readers. Each hold
 * is a {@link Lock} handle of its own and expires on its own at its TTL. A reader cannot
 * become a writer (release the read lock, then acquire the write lock): two readers
 * upgrading at once would each wait for the other forever.
 *
 * @example
 * ```ts
 * const doc = locker.readWriteLock('doc:42');
 * const text = await doc.read.withLock({ ttlMs: 5_000 }, () => loadDocument());
 * await doc.write.withLock({ ttlMs: 5_000 }, () => saveDocument(text));
 * ```
 */
export class ReadWriteLock {
  /** The lock's name, as given to `locker.readWriteLock`. */
  readonly name: string;
  /** Shared holds: any number at once, while no writer holds the lock. */
  readonly read: Acquirer;
  /** The exclusive hold: no reader and no other writer meanwhile. */
  readonly write: Acquirer;

  /** @internal Created by `Locker.readWriteLock`; not part of the public API. */
  constructor(context: LockContext, name: string) {
    this.name = name;
    const key = readWriteKey(context.settings.prefix, name);
    const side = (mode: 'read' | 'write') =>
      new Acquirer(
        context,
        { kind: readWriteKind(mode), resource: name, key },
        {
          owner: `ReadWriteLock.${mode}`,
        },
      );
    this.read = side('read');
    this.write = side('write');
  }
}
