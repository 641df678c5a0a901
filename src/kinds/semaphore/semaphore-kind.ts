import type { HoldKind } from '../../engine/contract.js';
import { semaphoreExtendScript } from './lua/semaphore-extend.js';
import { semaphoreReleaseScript } from './lua/semaphore-release.js';
import { semaphoreTakeScript } from './lua/semaphore-take.js';

/**
 * A permit of a counting semaphore with `permits` permits: each node keeps the holders in a
 * sorted set, by when their permit expires on its own clock; a permit counts with
 * {@link permitQuorumOf} grants. A release hands the permit to the first waiter in line and
 * wakes it; the waiter confirms it with a request of its own, as a lock's waiter does.
 */
export function semaphoreKind(permits: number): HoldKind {
  return {
    noun: 'permit',
    size: permits,
    quorum: (nodeCount) => permitQuorumOf(permits, nodeCount),
    take: (node, request, timeoutMs) => {
      const { key, token, attempt, unanswered, ttlMs, line } = request;
      const place = line ? { line: line.enter() } : {};
      const permit = { key, token, attempt, unanswered, ttlMs, permits, ...place };
      return semaphoreTakeScript.run(node, permit, timeoutMs).then((state) => ({ state }));
    },
    extend: (node, hold, timeoutMs) => semaphoreExtendScript.run(node, hold, timeoutMs),
    release: (node, { announce, line, ...hold }, timeoutMs) => {
      const end = announce ? 'release' : 'undo';
      const place = !announce && line ? { line } : {};
      return semaphoreReleaseScript.run(node, { ...hold, end, ...place }, timeoutMs);
    },
    leaveLine: (node, { granted, ...hold }, timeoutMs) => {
      const end = granted ? 'leave-granted' : 'leave';
      return semaphoreReleaseScript.run(node, { ...hold, end }, timeoutMs);
    },
  };
}

/**
 * Votes a semaphore permit needs out of `nodeCount`: more than `permits`/(`permits` + 1) of
 * the nodes, the least that keeps `permits` + 1 holders from each finding enough nodes. Each
 * node grants at most `permits` at once, so `permits` + 1 holders with q grants each need
 * (`permits` + 1) × q <= `permits` × N grants: impossible once q > `permits` × N /
 * (`permits` + 1). A majority is that bound only for one permit (see docs/semaphore.md).
 */
export function permitQuorumOf(permits: number, nodeCount: number): number {
  return Math.floor((permits * nodeCount) / (permits + 1)) + 1;
}
