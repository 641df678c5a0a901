import { connectionCause, isConfigurationError } from '../driver/connection.js';
import { isNodeDown } from '../driver/node-down.js';
import { NoQuorumError } from '../errors.js';
import type { Locker } from '../locker.js';
import type { NodeResult } from '../node-result.js';
import { quorumOf } from '../quorum/tally.js';
import { DEFAULT_NODE, type NodesFrom } from './node-options.js';

/**
 * Why a node could not be used: `down` (connection refused, no such host, no route: nothing
 * to wait for), `timeout` (no answer in time: slow, paused or unreachable), `tls` (a
 * certificate or TLS setting), `auth` (password or ACL), or `other`.
 */
export type NodeProblem = 'down' | 'timeout' | 'tls' | 'auth' | 'other';

/** What a node failed with, classified. */
export function problemOf(error: unknown): NodeProblem {
  if (isNodeDown(error)) return 'down';
  const cause = connectionCause(error);
  if (!(cause instanceof Error)) return 'other';
  // By name, for the reason connectionCause gives.
  if (!isConfigurationError(cause) || cause.name === 'ClusterNodeError') return 'other';
  return /^(WRONGPASS|NOAUTH|NOPERM|ERR The user|ERR ACL failure)\b/.test(cause.message)
    ? 'auth'
    : 'tls';
}

/** A node's problem in one operation; `undefined` when it answered (yes or no). */
export function resultProblem(result: NodeResult): NodeProblem | undefined {
  if (result.outcome === 'timeout') return 'timeout';
  return result.outcome === 'error' ? problemOf(result.error) : undefined;
}

/**
 * Makes `acquire` give up at once, with a `NoQuorumError` as the abort reason, when so many
 * nodes are down (connection refused, no such host, no route) that the others cannot make
 * a majority: waiting out `--wait` cannot help. A node that is slow or paused (no answer in
 * time) is waited for: it may answer on the next attempt.
 */
export function giveUpWhenDown(
  locker: Locker,
  resource: string,
): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onRetry = ({ nodes }: { nodes: readonly NodeResult[] }) => {
    const up = nodes.filter((n) => resultProblem(n) !== 'down').length;
    const needed = quorumOf(nodes.length);
    if (up >= needed) return;
    const why = `No quorum for "${resource}": ${up} of ${nodes.length} node(s) reachable, ${needed} needed.`;
    controller.abort(new NoQuorumError(resource, why, nodes));
  };
  locker.events.on('retry', onRetry);
  return { signal: controller.signal, dispose: () => locker.events.off('retry', onRetry) };
}

/** The nodes of a report that had a problem, for {@link hints}. */
export function unreadNodes(
  nodes: readonly { node: string; problem?: NodeProblem }[],
): { node: string; problem: NodeProblem }[] {
  return nodes.flatMap(({ node, problem }) => (problem ? [{ node, problem }] : []));
}

/** What to check, one line per kind of problem that the nodes had. */
export function hints(
  failed: readonly { node: string; problem: NodeProblem }[],
  from: NodesFrom,
): string[] {
  const of = (problem: NodeProblem) =>
    failed.filter((f) => f.problem === problem).map((f) => f.node);
  const lines: string[] = [];
  const down = of('down');
  if (down.length > 0) {
    const source =
      from === 'default'
        ? `no --redis, --cluster or --sentinel (nor DISTLOCK_REDIS, DISTLOCK_CLUSTER or DISTLOCK_SENTINEL) was given, so distlock used ${DEFAULT_NODE}`
        : `the nodes come from ${from}`;
    lines.push(`is Redis running at ${down.join(', ')}, and reachable from here? (${source})`);
  }
  const silent = of('timeout');
  if (silent.length > 0) {
    lines.push(
      `${silent.join(', ')} did not answer in time: overloaded, paused, or behind a firewall that drops packets?`,
    );
  }
  if (of('tls').length > 0) {
    lines.push(
      "check TLS: --tls-ca (the CA of the servers' certificates), --tls-cert and --tls-key " +
        '(if the servers require a client certificate), --tls-servername; rediss:// URLs ' +
        'need TLS ports, redis:// URLs plain ones',
    );
  }
  if (of('auth').length > 0) {
    lines.push(
      "check the user and password in the node's URL (redis://user:password@host:port) " +
        "and the user's ACL permissions",
    );
  }
  return lines;
}
