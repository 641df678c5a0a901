/**
 * Random raw commands on the universe's keys: every command the simulated node models,
 * with plausible and adversarial arguments (bad numbers, bad options, wrong arity, wrong
 * types), as argv byte strings.
 */

import type { Random } from '../../simulation/random.js';
import { bytesOf } from '../../src/testing/in-memory/bytes.js';
import {
  CHANNELS,
  HASH_KEYS,
  JUNK,
  KEYS,
  keyOf,
  STRING_KEYS,
  TOKENS,
  ZSET_KEYS,
} from './universe.js';

const VALUES = [
  'v',
  '1',
  '007',
  '-9223372036854775808',
  '9223372036854775806',
  't1:1',
  't2',
  '',
  '1 PUBLISH wake:1',
  bytesOf('é'),
];
const SCORES = [
  '1',
  '2',
  '1.5',
  '-0',
  '0',
  '-3',
  'inf',
  '-inf',
  '+inf',
  'nan',
  '1e400',
  '1e-400',
  '0x10',
  ' 1',
  '.5',
  '5.',
  'abc',
  '',
  '1700000000000',
  '0.1',
];
const BOUNDS = [
  '-inf',
  '+inf',
  'inf',
  '(1',
  '1',
  '2',
  '(',
  '',
  '0x1p-4',
  ' 0',
  'abc',
  '(abc',
  '(-inf',
  '1.5',
  'nan',
];
const INDEXES = ['0', '1', '-1', '-2', '5', '-100', '100', 'x', '1.5', '9223372036854775807'];
const MEMBERS = [...TOKENS, 't1:1', 't2:2', 'm', 'x'.repeat(70)];

const key = (r: Random) => r.pick(KEYS);
const string = (r: Random) => keyOf(r, STRING_KEYS);
const zset = (r: Random) => keyOf(r, ZSET_KEYS);
const hash = (r: Random) => keyOf(r, HASH_KEYS);
const some = <T>(r: Random, items: readonly T[], max: number) =>
  Array.from({ length: r.int(1, max) }, () => r.pick(items));
const maybe = (r: Random, p: number, ...args: string[]) => (r.chance(p) ? args : []);
const ttl = (r: Random) =>
  r.chance(0.85) ? String(r.int(1, 600)) : r.pick(['0', '-5', 'abc', '9223372036854775807', '1.5']);

/** Generators of one command each, with a weight. */
const COMMANDS: [number, (r: Random) => string[]][] = [
  [6, (r) => ['SET', string(r), r.pick(VALUES), ...setOptions(r)]],
  [4, (r) => ['GET', string(r)]],
  [2, (r) => ['DEL', ...some(r, KEYS, 3)]],
  [2, (r) => ['EXISTS', ...some(r, KEYS, 3)]],
  [1, (r) => ['TYPE', key(r)]],
  [3, (r) => ['PTTL', key(r)]],
  [1, (r) => ['PEXPIRETIME', key(r)]],
  [
    4,
    (r) => [
      'PEXPIRE',
      key(r),
      r.chance(0.8) ? String(r.int(-10, 600)) : r.pick(JUNK),
      ...some(r, ['NX', 'XX', 'GT', 'LT', 'gt', 'FOO'], 2).slice(0, r.int(0, 2)),
    ],
  ],
  [3, (r) => ['INCR', string(r)]],
  [
    6,
    (r) => [
      'ZADD',
      zset(r),
      ...some(r, ['NX', 'XX', 'CH', 'CH', 'GT', 'LT'], 2).slice(0, r.int(0, 2)),
      ...zaddPairs(r),
    ],
  ],
  [3, (r) => ['ZREM', zset(r), ...some(r, MEMBERS, 3)]],
  [3, (r) => ['ZSCORE', zset(r), r.pick(MEMBERS)]],
  [2, (r) => ['ZCARD', zset(r)]],
  [2, (r) => ['ZRANK', zset(r), r.pick(MEMBERS), ...maybe(r, 0.05, 'WITHSCORE')]],
  [
    3,
    (r) => [
      'ZRANGE',
      zset(r),
      r.pick(INDEXES),
      r.pick(INDEXES),
      ...maybe(r, 0.5, r.chance(0.9) ? 'WITHSCORES' : 'FOO'),
    ],
  ],
  [
    3,
    (r) => [
      'ZRANGEBYSCORE',
      zset(r),
      r.pick(BOUNDS),
      r.pick(BOUNDS),
      ...maybe(r, 0.4, r.chance(0.9) ? 'withscores' : 'REV'),
    ],
  ],
  [2, (r) => ['ZREMRANGEBYSCORE', zset(r), r.pick(BOUNDS), r.pick(BOUNDS)]],
  [1, (r) => ['ZCOUNT', zset(r), r.pick(BOUNDS), r.pick(BOUNDS)]],
  [
    3,
    (r) => [
      'HSET',
      hash(r),
      ...some(r, ['fence', 'value', 't1', 't2'], 4)
        .flatMap((f) => [f, r.pick(VALUES)])
        .slice(0, r.chance(0.1) ? 3 : undefined),
    ],
  ],
  [3, (r) => ['HGET', hash(r), r.pick(['fence', 'value', 't1', 't2'])]],
  [2, (r) => ['HDEL', hash(r), ...some(r, ['fence', 'value', 't1'], 2)]],
  [2, (r) => ['HMGET', hash(r), ...some(r, ['fence', 'value', 't1'], 3)]],
  [1, (r) => ['HGETALL', hash(r)]],
  [2, (r) => ['PUBLISH', r.pick([...CHANNELS, 'other']), r.pick(['1', '2', ''])]],
  [1, () => ['TIME']],
  [1, (r) => ['PING', ...maybe(r, 0.3, 'hi')]],
  [
    1,
    (r) => [
      r.pick(['GET', 'ZSCORE', 'PTTL', 'ZADD', 'SET', 'hget']),
      ...some(r, KEYS, 1).slice(0, r.int(0, 1)),
    ],
  ],
  [1, (r) => ['NOSUCH', ...maybe(r, 0.5, key(r))]],
];

function setOptions(r: Random): string[] {
  const options: string[] = r.chance(0.7) ? ['PX', ttl(r)] : [];
  for (let i = r.int(0, 2); i > 0; i--) {
    const option = r.pick(['NX', 'XX', 'PX', 'EX', 'KEEPTTL', 'px', 'FOO']);
    options.push(option, ...(/^(px|ex)$/i.test(option) ? [ttl(r)] : []));
  }
  return options;
}

function zaddPairs(r: Random): string[] {
  // Mostly a few scores, so that members are often set again to the score they have.
  const score = () => {
    const roll = r.next();
    return r.pick(roll < 0.5 ? SCORES.slice(0, 2) : roll < 0.8 ? SCORES.slice(0, 8) : SCORES);
  };
  const pairs = some(r, MEMBERS.slice(0, r.chance(0.5) ? 3 : undefined), 3).flatMap((member) => [
    score(),
    member,
  ]);
  return r.chance(0.05) ? pairs.slice(1) : pairs;
}

const TOTAL = COMMANDS.reduce((sum, [weight]) => sum + weight, 0);

/** One random raw command. */
export function rawCommand(r: Random): string[] {
  let left = r.next() * TOTAL;
  for (const [weight, make] of COMMANDS) {
    left -= weight;
    if (left < 0) return make(r);
  }
  return ['PING'];
}
