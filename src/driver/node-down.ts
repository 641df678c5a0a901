import { connectionCause } from './connection.js';

/**
 * Socket errors that say nothing listens at the node's address, or that there is no such
 * host or no route to it. A timeout is not one of them: a slow or paused node may answer.
 */
const DOWN_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether `error` (or the connection error behind a `NotSentError`) says that the node
 * cannot be connected to at all: connection refused, no such host, no route.
 */
export function isNodeDown(error: unknown): boolean {
  const cause = connectionCause(error);
  return cause instanceof Error && DOWN_CODES.has((cause as NodeJS.ErrnoException).code ?? '');
}
