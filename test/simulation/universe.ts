/**
 * The few names the differential test draws from, so that scripts and raw commands keep
 * meeting on the same keys (and on keys of the wrong type): locks, a semaphore, a read-write
 * lock and a fenced resource, with every key their scripts derive.
 */

import type { Random } from '../../simulation/random.js';
import { fenceKey, lineTurnKey, queueKeys, readWriteKeys } from '../../src/keys.js';
import { bytesOf } from '../../src/testing/in-memory/bytes.js';

export const LOCKS = ['{a}', '{b}'];
export const SEMAPHORE = '{s}:permits';
export const READ_WRITE = '{r}:rw';
export const RESOURCES = ['{d}', '{e}'];
/** Tokens, two with an owner label (one a semaphore permit's, with its size): see `acquisitionToken`. */
export const TOKENS = ['t1', 't2', 't3', 't4.1764426000000.web-1%3A42', 't5.1764426000001p3.w%202'];
export const CHANNELS = ['wake:1', 'wake:2'];

const rw = readWriteKeys(READ_WRITE);
const lines = [...LOCKS, SEMAPHORE, READ_WRITE].map((key) => queueKeys(key));

/** The keys the scripts keep strings in (and one of nobody's). */
export const STRING_KEYS = [...LOCKS, ...LOCKS.map(fenceKey), rw.writer, 'x'];
/** ... sorted sets */
export const ZSET_KEYS = [
  SEMAPHORE,
  rw.readers,
  rw.waitingWriters,
  ...lines.flatMap(({ queue, deadlines }) => [queue, deadlines]),
  'y',
];
/** ... and hashes. */
export const HASH_KEYS = [
  ...RESOURCES,
  ...lines.map(({ channels }) => channels),
  ...LOCKS.map(lineTurnKey),
];

/** Every key a script of the universe touches, plus two of nobody's. */
export const KEYS: readonly string[] = [...STRING_KEYS, ...ZSET_KEYS, ...HASH_KEYS];

/** Mostly a key of the type the scripts keep there, sometimes any (to meet WRONGTYPE). */
export function keyOf(r: Random, keys: readonly string[]): string {
  return r.chance(0.93) ? r.pick(keys) : r.pick(KEYS);
}

/** Arguments meant to break what parses them. */
export const JUNK: readonly string[] = [
  '',
  'x',
  '-1',
  '0',
  '-0',
  '1.5',
  '7',
  ' 7',
  '0x10',
  'inf',
  'nan',
  '1e3',
  '1e400',
  '99999999999999999999',
  '9223372036854775807',
  't1:2',
  bytesOf('é'),
];
