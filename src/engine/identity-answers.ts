/**
 * One node's answer to a round's `INFO` (which server it is, its clock, its lease record), and
 * what a round does with the answers once it is over (see `IdentityRounds`).
 */
import type { StallGuard } from '../driver/stall-guard.js';
import { findDuplicates } from './duplicate-servers.js';
import type { NodeSet } from './every-node.js';
import type { IdentityBook } from './identity-book.js';
import { type InfoRead, serverClockOffsetMs } from './identity-change.js';
import type { Identity } from './identity-state.js';
import { isInfoRefused, takeInfo } from './info-answer.js';
import { LeaseRecords } from './lease-records.js';

/** One round of INFO: whether it is over, and the warnings it gives when it is. */
export interface Round {
  over: boolean;
  /** The nodes that answer as another server, and their warnings. */
  readonly changes: { readonly id: Identity; readonly warn: () => void }[];
  /** Its per-node timeout. */
  readonly timeoutMs: number;
}

/**
 * Takes in the nodes that answered as another server: each abstains for the fleet's longest
 * lease, so every record is read again first (with lease records: a promise, over once they
 * are), then each gets its warning.
 */
export function takeChanges(
  book: IdentityBook,
  context: NodeSet,
  timeoutMs: number,
  changes: Round['changes'],
): Promise<void> | undefined {
  if (changes.length === 0) return undefined;
  const take = () => {
    for (const { id } of changes) id.rereading = false;
    for (const { warn } of changes) warn();
  };
  const refreshing = book.records?.refresh(context, timeoutMs);
  if (!refreshing) return void take();
  return refreshing.then(take);
}

/** Asks node `index` which server it is (and its lease record), in `round`. */
export async function askOne(
  book: IdentityBook,
  context: NodeSet,
  node: StallGuard,
  index: number,
  round: Round,
): Promise<void> {
  const { clock } = context;
  const id = book.ids[index] as Identity;
  const generation = node.generation;
  // Read before INFO is answered: that answer is the new connection's.
  const lastAnsweredAt = node.answeredAt(id.generation);
  try {
    // A readiness wait of 0: a connection that is not up is asked again next time.
    const askedAt = clock.now();
    const infoSent = node.send('INFO', [], 0);
    // Its lease record, read in the same round trip (a read: nothing a stranger keeps).
    const record = book.records ? LeaseRecords.fetch(context, node) : undefined;
    record?.catch(() => undefined); // INFO's failure is the one to tell
    const info = String(await infoSent);
    const read = { askedAt, readAt: clock.now() };
    const offsetMs = serverClockOffsetMs(info, read, Date.now());
    if (offsetMs !== undefined) takeClockOffset(book, index, offsetMs);
    const change = readAnswer(book, index, info, generation, read, lastAnsweredAt);
    if (!round.over) {
      if (change) round.changes.push({ id, warn: change });
    } else {
      // An answer after its round: compared with the others now; a node that changed
      // abstains for the fleet's longest lease, read again first, as in a round.
      try {
        const changes = change ? [{ id, warn: change }] : [];
        takeChanges(book, context, round.timeoutMs, changes)?.catch(() => undefined);
      } finally {
        compareServers(book, context);
      }
    }
    if (record) book.records?.take(index, await record);
  } catch (error) {
    id.failure = error instanceof Error ? error : undefined;
    // Only the server's own refusal (INFO renamed or denied) is final; a connection
    // error, or nothing sent, is asked again next time.
    if (isInfoRefused(error) && id.runIds === undefined) {
      id.runIds = null;
      book.refusal ??= book.rules.inspect(index, undefined);
    }
  }
}

/**
 * Takes in node `index`'s answer to INFO, sent on connection `generation` (`read`: when it
 * was asked and answered; see `takeInfo`). Returns the warning to give once the round is
 * over, when the node answers as another server.
 */
function readAnswer(
  book: IdentityBook,
  index: number,
  info: string,
  generation: number,
  read: InfoRead,
  lastAnsweredAt: number | undefined,
): (() => void) | undefined {
  const taken = takeInfo(book.ids[index] as Identity, info, generation, read, lastAnsweredAt, {
    isCluster: book.set?.nodes[index]?.isCluster === true,
    restartGraceMs: book.rules.restartGraceMs,
    leaseRecords: book.records !== undefined,
    abstainsOnChange: book.rules.abstainsOnChange,
  });
  const changed = taken.changed;
  if (changed) book.records?.forget(index);
  if (taken.inspect) book.refusal ??= book.rules.inspect(index, info);
  if (!changed) return undefined;
  const { change, before, after } = changed;
  return () =>
    book.rules.warn(
      index,
      'NODE_IDENTITY_CHANGED',
      book.voting.changeWarning(change, read.readAt, before, after),
    );
}

/** Compares the servers the nodes answered as (see `findDuplicates`). */
export function compareServers(book: IdentityBook, context: NodeSet): void {
  const found = findDuplicates(book.ids, (index) => context.nodes[index]?.name);
  book.refusal ??= found.refusal;
  for (const { index, message } of found.warnings)
    book.rules.warn(index, 'NODE_DUPLICATE', message);
}

/** Takes node `index`'s clock offset, by its latest INFO (see `NodeIdentities.clockOffsetMs`). */
function takeClockOffset(book: IdentityBook, index: number, offsetMs: number): void {
  (book.ids[index] as Identity).clockOffsetMs = offsetMs;
  const offsets: number[] = [];
  for (const id of book.ids) if (id.clockOffsetMs !== undefined) offsets.push(id.clockOffsetMs);
  offsets.sort((a, b) => a - b);
  book.clockOffsetMs = offsets[Math.floor(offsets.length / 2)];
}
