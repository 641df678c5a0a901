/**
 * Why a node that said which server it is does not vote, in words: the error its vote
 * carries (see `NodeIdentities.abstention`).
 */
import { NotSentError } from '../driver/connection.js';
import { abstentionReason, type IdentityChange } from './identity-change.js';

/** What keeps one node from voting, by the first that applies. */
export interface NodeStanding {
  /** The node's name. */
  readonly name: string;
  /** Another node that reaches the same server, and votes for it. */
  readonly duplicateOf: { readonly index: number; readonly name: string } | undefined;
  /**
   * A change (a restart, a failover, a young server) it abstains for at `now`: its grace
   * still runs, or the lease records that may lengthen it are being read again.
   */
  readonly grace:
    | {
        readonly change: IdentityChange;
        readonly now: number;
        readonly graceName: string;
        readonly until: number;
      }
    | undefined;
  /** Its connection was re-established since it said which server it is. */
  readonly reconnected: boolean;
  /** Why it could not be asked last time. */
  readonly failure: Error | undefined;
  /** First seen: the lease records tell whether it is young. */
  readonly arriving: boolean;
  /** Its server not yet compared with the other nodes'. */
  readonly unchecked: boolean;
  /** The lease record it lacks, and the server's refusal to write it if any. */
  readonly unrecorded: { readonly ttlMs: number; readonly failure: Error | undefined } | undefined;
}

/** The error of the vote of a node in `standing`; `undefined` when nothing keeps it out. */
export function abstentionError(standing: NodeStanding): NotSentError | undefined {
  const { name, duplicateOf, grace, failure, unrecorded } = standing;
  if (duplicateOf) {
    return new NotSentError(
      `${name} now reaches the same server as nodes[${duplicateOf.index}] (${duplicateOf.name}), which votes for it: one server must not count twice`,
    );
  }
  if (grace) {
    const { change, now, graceName, until } = grace;
    return new NotSentError(`${name} ${abstentionReason(change, now, graceName, until)}`);
  }
  if (standing.reconnected) {
    const why = failure ? `: ${failure.message}` : '';
    return new NotSentError(
      `${name} reconnected: it votes again once it has said which server it now is${why}`,
      { cause: failure },
    );
  }
  if (standing.arriving) {
    return new NotSentError(
      `${name} is first seen: it votes once the lease records of the other nodes tell whether it restarted`,
    );
  }
  if (standing.unchecked) {
    return new NotSentError(
      `${name} said which server it is, not yet compared with the other nodes' (one server must not count twice): it votes once that check is over`,
    );
  }
  if (unrecorded) {
    // The server's own refusal first (READONLY, OOM, NOPERM): the lock would get it too.
    const recording = `the ${unrecorded.ttlMs} ms lease record that guards against its restarts`;
    const refused = unrecorded.failure;
    return refused
      ? new NotSentError(`${refused.message} (${name}, writing ${recording}; nothing else sent)`, {
          cause: refused,
        })
      : new NotSentError(`${name} has not written ${recording} yet: it votes once it has`);
  }
  return undefined;
}
