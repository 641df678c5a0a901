import type { HoldKind } from '../../engine/contract.js';
import { quorumOf } from '../../quorum/tally.js';
import { readWriteExtendScript } from './lua/read-write-extend.js';
import { readWriteReleaseScript } from './lua/read-write-release.js';
import { readWriteTakeScript } from './lua/read-write-take.js';

/**
 * A read or a write hold of a read-write lock. Both need a majority: two writers' majorities
 * share a node, and so do a reader's and a writer's, which is all the exclusion needed
 * (readers never exclude each other).
 */
export function readWriteKind(mode: 'read' | 'write'): HoldKind {
  return {
    noun: `${mode} lock`,
    quorum: quorumOf,
    take: (node, { key, token, attempt, unanswered, ttlMs, line }, timeoutMs) => {
      const hold = { key, token, attempt, unanswered, ttlMs, mode };
      const request = { ...hold, ...(line ? { line: line.enter() } : {}) };
      return readWriteTakeScript.run(node, request, timeoutMs).then((state) => ({ state }));
    },
    extend: (node, hold, timeoutMs) =>
      readWriteExtendScript.run(node, { ...hold, mode }, timeoutMs),
    release: (node, hold, timeoutMs) =>
      readWriteReleaseScript.run(node, { ...hold, mode }, timeoutMs),
    leaveLine: (node, { granted: _, ...hold }, timeoutMs) =>
      readWriteReleaseScript.run(node, { ...hold, mode: 'leave', announce: true }, timeoutMs),
  };
}
