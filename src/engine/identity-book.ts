/**
 * What a locker knows of its nodes' servers (`IdentityBook`): `NodeIdentities` reads it to
 * tell who votes; the rounds that ask the nodes (`IdentityRounds`, with `identity-due.ts` and
 * `identity-answers.ts`) fill it in.
 */
import type { WarningCode } from './events.js';
import type { NodeSet } from './every-node.js';
import type { IdentityChange } from './identity-change.js';
import type { Identity } from './identity-state.js';
import type { LeaseRecords } from './lease-records.js';

/**
 * The locker's check of a server's settings (such as eviction) by its `INFO`, before it takes
 * part in a lock: an error refuses it. `info` is undefined when the server will not say (INFO
 * renamed or denied).
 */
export type ServerInspection = (index: number, info: string | undefined) => Error | undefined;

/** How the nodes' identities count, fixed when the locker is made (see `NodeIdentities`). */
export interface IdentityRules {
  readonly inspect: ServerInspection;
  /** Reports a warning about node `index`. */
  readonly warn: (index: number, code: WarningCode, message: string) => void;
  /** Whether a node's votes may count before it answered: one node cannot count twice. */
  readonly trustedAtOnce: boolean;
  /** Whether a node that changed identity abstains for the grace (else: a warning only). */
  readonly abstainsOnChange: boolean;
  readonly restartGraceMs: number | undefined;
}

/** What the locker knows of its nodes: the rounds fill it in, `NodeIdentities` reads it. */
export interface IdentityBook {
  readonly ids: Identity[];
  /** The nodes' lease records: on two nodes or more, without `restartGraceMs`. */
  readonly records: LeaseRecords | undefined;
  readonly rules: IdentityRules;
  /** The nodes, clock and settings, from the first check on. */
  set: NodeSet | undefined;
  /** Why no lock may be granted: a server listed twice, or one `inspect` refused. */
  refusal: Error | undefined;
  /** The longest TTL the locker asked for so far: part of the default restart grace. */
  longestTtlMs: number;
  /** The median of the nodes' clock offsets (see `NodeIdentities.clockOffsetMs`). */
  clockOffsetMs: number | undefined;
  readonly voting: VotingRules;
}

/** How the votes count (`NodeIdentities`), as the rounds need it. */
export interface VotingRules {
  /** Whether node `index` votes, its lease record aside. */
  votes(index: number): boolean;
  /**
   * The warning for a node that answers as another server, `now` when it answered: its words
   * name the grace it abstains for.
   */
  changeWarning(
    change: IdentityChange,
    now: number,
    before: readonly string[],
    after: readonly string[],
  ): string;
}
