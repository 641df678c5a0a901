import { isConfigurationError } from '../driver/connection.js';
import { NoQuorumError } from '../errors.js';
import type { NodeResult } from '../node-result.js';

/**
 * Whether so many nodes failed with a configuration error (WRONGPASS, NOAUTH, NOPERM, a
 * command an ACL user may not run inside a script, a TLS certificate) that the others cannot
 * make `quorum`: retrying cannot help. `results` may still miss the nodes that did not answer.
 */
export function misconfiguredQuorum(
  results: readonly (NodeResult | undefined)[],
  quorum: number,
): boolean {
  const broken = results.filter((r) => r?.outcome === 'error' && isConfigurationError(r.error));
  return broken.length > 0 && results.length - broken.length < quorum;
}

/** What a failure caused by a configuration error adds to its message. */
export const CONFIGURATION_HINT =
  'A configuration error (credentials, permissions, TLS, a Cluster node given as one server, a client never connected): retrying cannot fix it.';

/**
 * The error of an operation on a held lock (a release, an extension) that configuration
 * errors kept from a quorum: `what` failed, then `consequence`, then the hint; `nodes` name
 * each node's error (for an ACL user, the command to grant).
 */
export function misconfiguredOperation(
  resource: string,
  what: string,
  consequence: string,
  nodes: readonly (NodeResult | undefined)[],
  quorum: number,
): NoQuorumError {
  const answered = nodes.filter((n) => n !== undefined);
  const yes = answered.filter((n) => n.outcome === 'yes').length;
  return new NoQuorumError(
    resource,
    `${what} "${resource}" failed: ${yes} of ${nodes.length} node(s) agreed, ${quorum} needed; ${consequence}. ${CONFIGURATION_HINT}`,
    answered,
  );
}
