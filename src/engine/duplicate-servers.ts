/**
 * Nodes that reach one server: found among the nodes' identities, so that one server never
 * counts twice towards a majority (see `NodeIdentities`).
 */
import { InvalidArgumentError } from '../errors.js';
import type { Identity } from './identity-state.js';

/** What a comparison of the nodes' servers found. */
export interface DuplicateServers {
  /** Two nodes as first seen reach one server: a listing error, which refuses every lock. */
  readonly refusal: InvalidArgumentError | undefined;
  /** A node that changed now reaches another node's server: it abstains from now on. */
  readonly warnings: readonly { readonly index: number; readonly message: string }[];
}

/**
 * Compares the servers the nodes answered as. Between nodes as they were first seen, one
 * server twice is a listing error: the refusal names the first such node. Once a node
 * changed, the one that changed abstains (its address now leads elsewhere) while it lasts
 * (`duplicateOf`), with a warning when it begins. Every node's `unchecked` ends.
 * `nameOf`: a node's name, for the refusal.
 */
export function findDuplicates(
  ids: readonly Identity[],
  nameOf: (index: number) => string | undefined,
): DuplicateServers {
  let refusal: InvalidArgumentError | undefined;
  const warnings: { index: number; message: string }[] = [];
  const owner = new Map<string, number>();
  const order = [...ids.keys()].sort((a, b) => Number(ids[a]?.changed) - Number(ids[b]?.changed));
  for (const index of order) {
    const id = ids[index] as Identity;
    const was = id.duplicateOf;
    id.duplicateOf = undefined;
    id.unchecked = false;
    if (!Array.isArray(id.runIds)) continue;
    const clash = id.runIds.map((runId) => owner.get(runId)).find((o) => o !== undefined);
    if (clash === undefined) {
      for (const runId of id.runIds) owner.set(runId, index);
      continue;
    }
    if (!id.changed) {
      const runId = id.runIds.find((r) => owner.get(r) === clash);
      refusal ??= new InvalidArgumentError(
        `nodes[${index}]`,
        `a different Redis server from nodes[${clash}] (both answer with run_id ${runId}; one server counted twice would inflate the quorum)`,
        nameOf(index),
      );
      continue;
    }
    id.duplicateOf = clash;
    if (was !== clash) {
      warnings.push({
        index,
        message: `it now reaches the same server as nodes[${clash}] (${nameOf(clash) ?? ''}): it does not vote while one server would count twice`,
      });
    }
  }
  return { refusal, warnings };
}
