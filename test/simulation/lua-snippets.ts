/**
 * Small scripts that exercise the Lua side of the simulated node directly: number reading
 * and printing, the conversions between Lua values and replies both ways, `redis.call` and
 * `redis.pcall` errors, the `redis` library, 5.1's globals and their protection.
 */

import type { Random } from '../../simulation/random.js';
import { bytesOf } from '../../src/testing/in-memory/bytes.js';
import { CHANNELS, JUNK, KEYS } from './universe.js';

const NUMBERS = [
  ...JUNK,
  '3',
  '-2.5',
  '1700000000123',
  '2.5e-7',
  '123456789012345',
  '0.1',
  '1e15',
  '-1e300',
  ' 5 ',
  '5\0x',
];

/** Lists every global and the names in each library table, sorted. */
const GLOBALS = `local out = {}
for k, v in pairs(_G) do
  if type(v) == 'table' and k ~= '_G' and k ~= 'KEYS' and k ~= 'ARGV' then
    local names = {}
    for n in pairs(v) do names[#names + 1] = tostring(n) end
    table.sort(names)
    out[#out + 1] = k .. ': ' .. table.concat(names, ' ')
  else
    out[#out + 1] = k .. ' (' .. type(v) .. ')'
  end
end
table.sort(out)
return out`;

/** [lua, how many KEYS, ARGV generator] */
const SNIPPETS: [string, number, (r: Random) => string[]][] = [
  ['return tonumber(ARGV[1])', 0, (r) => [r.pick(NUMBERS)]],
  ['return tostring(tonumber(ARGV[1]))', 0, (r) => [r.pick(NUMBERS)]],
  [
    "return ARGV[1] .. ':' .. (tonumber(ARGV[2]) or 'none') * 2",
    0,
    (r) => [r.pick(NUMBERS), r.pick(NUMBERS)],
  ],
  [
    'return {tonumber(ARGV[1]) / 3, (tonumber(ARGV[1]) or 0) .. "", ARGV[1] + 0.5}',
    0,
    (r) => [r.pick(NUMBERS)],
  ],
  [
    'return {math.floor(tonumber(ARGV[1])), math.max(1, tonumber(ARGV[1])), 7 % tonumber(ARGV[1]), math.min(tonumber(ARGV[1]), 1) .. ""}',
    0,
    (r) => [r.pick(NUMBERS)],
  ],
  ["return redis.call('ZADD', KEYS[1], tonumber(ARGV[1]), 'm')", 1, (r) => [r.pick(NUMBERS)]],
  [
    "redis.call('SET', KEYS[1], tonumber(ARGV[1]) / 3) return redis.call('GET', KEYS[1])",
    1,
    (r) => [r.pick(NUMBERS)],
  ],
  [
    "return redis.call('HSET', KEYS[1], 'f', tonumber(ARGV[1]) * 1000)",
    1,
    (r) => [r.pick(NUMBERS)],
  ],
  ["return redis.pcall('INCR', KEYS[1])", 1, () => []],
  [
    "return {redis.pcall('ZCARD', KEYS[1]), redis.pcall('GET', KEYS[1]), redis.pcall('PTTL', KEYS[1])}",
    1,
    () => [],
  ],
  [
    'return redis.call(ARGV[1], KEYS[1])',
    1,
    (r) => [r.pick(['GET', 'PTTL', 'INCR', 'ZCARD', 'TYPE', 'nosuch', 'EVAL', 'ZADD', 'WAIT'])],
  ],
  [
    "return {1, 2.9, -2.9, 'x', true, false, {ok='fine'}, {err='E bad'}, {double=1.5}, {1, nil, 3}, 1e300, -0.5}",
    0,
    () => [],
  ],
  ['return {ok=ARGV[1]}', 0, (r) => [r.pick(['fine', 'a\r\nb', ''])]],
  ['return {err=ARGV[1]}', 0, (r) => [r.pick(['E bad', 'nospace', '', 'a\nb'])]],
  ['return redis.error_reply(ARGV[1])', 0, (r) => [r.pick(['E bad', 'nospace', '-X y', '-solo'])]],
  ['return redis.status_reply(ARGV[1])', 0, (r) => [r.pick(['OK', 'a b'])]],
  ['error(ARGV[1])', 0, (r) => [r.pick(['boom', '', 'a\nb'])]],
  [
    "local t = redis.call('TIME') return {t[1], t[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}",
    0,
    () => [],
  ],
  [
    "local entry = ARGV[1] return {string.match(entry, '^(%S+) (S?PUBLISH) (.+)$')}",
    0,
    (r) => [
      r.pick(['3 PUBLISH wake:1', '3 SPUBLISH w', '3 wake:1', '3', ' x', bytesOf('4 PUBLISH é')]),
    ],
  ],
  [
    "return #ARGV[1] .. ' ' .. string.sub(ARGV[1], 2) .. ' ' .. string.rep('a', 2)",
    0,
    (r) => [r.pick(NUMBERS)],
  ],
  ["return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", 1, () => []],
  [
    "return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]))",
    1,
    (r) => [r.pick(NUMBERS)],
  ],
  ["return redis.call('PUBLISH', ARGV[1], 'm')", 0, (r) => [r.pick(CHANNELS)]],
  ["return redis.call('SET', KEYS[1], 'v', 'PX', ARGV[1])", 1, (r) => [r.pick(NUMBERS)]],
  ['return redis.call()', 0, () => []],
  ["return redis.pcall('GET', {})", 0, () => []],
  ["return redis.pcall('GET')", 0, () => []],
  ['return redis.sha1hex(ARGV[1])', 0, (r) => [r.pick(NUMBERS)]],
  ['return unpack({1, 2, 3})', 0, () => []],
  [
    'return {type(unpack), type(table.unpack), type(loadstring), type(math.pow), type(string.gfind), type(rawlen), _VERSION}',
    0,
    () => [],
  ],
  ['return nosuchglobal', 0, () => []],
  ['newglobal = 1', 0, () => []],
  ['string.extra = 1', 0, () => []],
  ['local ok, e = pcall(redis.call, "INCR", KEYS[1]) return {tostring(ok), e}', 1, () => []],
  ['return select("#", unpack(KEYS))', 2, () => []],
  [GLOBALS, 0, () => []],
];

/** One snippet as an EVAL command (argv). */
export function luaSnippet(r: Random): string[] {
  const [lua, keyCount, args] = r.pick(SNIPPETS);
  const keys = Array.from({ length: keyCount }, () => r.pick(KEYS));
  return ['EVAL', lua, String(keyCount), ...keys, ...args(r)];
}
