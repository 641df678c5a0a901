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

/**
 * Marks a snippet where fengari's Lua 5.3 (the VM `InMemoryRedis` runs) and Redis's 5.1
 * differ, and only the simulation's compiled scripts are held to Redis (a comment, so the
 * script runs as it is).
 */
const VM_DIFFERS = '-- vm differs\n';

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
  // What the compiled scripts of the simulation must do as Redis's Lua does (see
  // simulation/lua/): patterns, multiple results, and the words and lines of runtime errors.
  [
    // 5.3 (the VM) words some malformed patterns apart ("invalid capture index %1").
    `${VM_DIFFERS}return {string.find(ARGV[1], ARGV[2])}`,
    0,
    (r) => [r.pick(SUBJECTS), pattern(r)],
  ],
  [
    // 5.3 (the VM) gives nil for a start past the end; 5.1 still matches there.
    `${VM_DIFFERS}return {string.match(ARGV[1], ARGV[2], tonumber(ARGV[3]))}`,
    0,
    (r) => [r.pick(SUBJECTS), pattern(r), r.pick(['1', '2', '-3', '0', '99'])],
  ],
  [
    // 5.3 (the VM) skips an empty match right after a match; 5.1 does not.
    `${VM_DIFFERS}local out = {}\nfor a, b in string.gmatch(ARGV[1], ARGV[2]) do\n  out[#out + 1] = a .. '|' .. tostring(b)\nend\nreturn out`,
    0,
    (r) => [r.pick(SUBJECTS), pattern(r)],
  ],
  [
    `${VM_DIFFERS}return {string.find(ARGV[1], ARGV[2], 2, true)}`,
    0,
    (r) => [r.pick(SUBJECTS), r.pick(['a', '(', '%d', ''])],
  ],
  ['local t = {}\nreturn t.a.b', 0, () => []],
  ['local x\nreturn x + 1', 0, () => []],
  ['return ARGV[1] + 1, 2', 0, (r) => [r.pick(NUMBERS)]],
  [
    // 5.3 (the VM) places an operation split over lines on its first line, 5.1 on its last.
    `${VM_DIFFERS}return KEYS[1] .. ':' ..\n tonumber(ARGV[1])`,
    1,
    (r) => [r.pick(NUMBERS)],
  ],
  ['return {tonumber(ARGV[1]) < 5, 5 > tonumber(ARGV[1]) or false}', 0, (r) => [r.pick(NUMBERS)]],
  ['for i = 1, tonumber(ARGV[1]) do end\nreturn 1', 0, (r) => [r.pick(INTEGERS)]],
  ['return #tonumber(ARGV[1])', 0, (r) => [r.pick(NUMBERS)]],
  [
    "return string.format('%d %5s|%-3d|%x', tonumber(ARGV[1]), ARGV[1], 7, 255)",
    0,
    (r) => [r.pick(INTEGERS)],
  ],
  [
    'local t = {}\nt[tonumber(ARGV[1])] = 1\nreturn {t[1], t[tonumber(ARGV[1])]}',
    0,
    (r) => [r.pick([...NUMBERS, 'nan'])],
  ],
  [
    'return {string.sub(ARGV[1], tonumber(ARGV[2]) or 1, -2), string.rep(ARGV[1], 3)}',
    0,
    (r) => [r.pick(NUMBERS), r.pick(INTEGERS)],
  ],
  ['local x\nlocal function f() return x + 1 end\nreturn f()', 0, () => []],
  ['local function f() return 1, 2 end\nreturn {f(), (f()), f()}', 0, () => []],
  [
    "local t = {}\ntable.insert(t, ARGV[1])\ntable.insert(t, 1, 'a')\nreturn table.concat(t, ',')",
    0,
    (r) => [r.pick(NUMBERS)],
  ],
  ['local ok, e = pcall(function() return nil + 1 end)\nreturn {tostring(ok), e}', 0, () => []],
  [
    'local r = string.rep\nlocal ok, e = pcall(function() return string.rep() end)\nreturn {e, select(2, pcall(function() return r({}) end))}',
    0,
    () => [],
  ],
  [
    "local i, s = 0, ''\nrepeat i = i + 1 s = s .. i until i >= 3\nwhile i > 0 do i = i - 1 end\nreturn s",
    0,
    () => [],
  ],
  // Found in review: a result array shared with a table, the order of several stores, lines.
  [
    "local function f() end\nlocal t = {f()}\nt[1] = 'x'\nlocal u = {f()}\nreturn {#u, t[1]}",
    0,
    () => [],
  ],
  [
    "local function f(...)\n  local t = {...}\n  t[1] = 'z'\n  return ...\nend\nreturn f('a')",
    0,
    () => [],
  ],
  ['local t = {}\nt[1], t[1] = 1, 2\nreturn t[1]', 0, () => []],
  ['for i = 1, nil do\n  local y = 1\nend', 0, () => []],
  ['local k\nreturn {\n  [k] = 1,\n  a = 2,\n}', 0, () => []],
  ['return redis.error_reply(ARGV[1])', 0, (r) => [r.pick(['\nfoo', '-CODE \r\nbar\n', 'x\r'])]],
  ["return string.format('%d %s', 1)", 0, () => []],
  // fengari (the VM) takes a back reference to a position capture as a match; C Lua does not.
  [`${VM_DIFFERS}return {string.find('xxabc', '()ab%1')}`, 0, () => []],
  // 5.3 (the VM) refuses what 5.1 casts: huge positions, infinite ones; and pcall() with nothing.
  [
    `${VM_DIFFERS}return {string.sub('hello', 1e300), string.sub('hello', 1, 1/0), string.rep('x', 4294967297)}`,
    0,
    () => [],
  ],
  [`${VM_DIFFERS}return pcall()`, 0, () => []],
  // 5.3 (the VM) reads a pattern past a NUL; 5.1 stops there.
  [`${VM_DIFFERS}return {string.find('a\0.', 'a\0.'), string.find('', '\0+')}`, 0, () => []],
];

/**
 * Whole numbers (and a few that are not numbers): where 5.1 truncates a fraction and fengari's
 * 5.3 refuses it (`string.sub`, `%d`), and loop bounds that end.
 */
const INTEGERS = ['3', '-2', '0', '1', '7', 'x', '', ' 5 '];

/** Strings the pattern snippets search. */
const SUBJECTS = [
  '3 PUBLISH wake:1',
  'abc(def)ghi',
  '',
  'aaa',
  'x-y_z.12',
  bytesOf('é 9'),
  '12 34 567',
];

const PATTERN_PIECES = [
  '%d+',
  '%a*',
  '[%w_-]+',
  '%S+',
  '.-',
  '[^ ]',
  '%s',
  'a?',
  '()',
  '(%d)',
  '%1',
  '[a-c]',
  '%b()',
  '%f[%w]',
  ' ',
  '%.',
  '^',
  '$',
  '(',
  ')',
  '%',
  '[',
];

/** A pattern of a few pieces: often valid, sometimes malformed (both sides must agree). */
function pattern(r: Random): string {
  return Array.from({ length: r.int(1, 4) }, () => r.pick(PATTERN_PIECES)).join('');
}

/** Whether a snippet is one of those (see VM_DIFFERS). */
export function vmDiffers(argv: readonly string[]): boolean {
  return argv[0] === 'EVAL' && (argv[1] ?? '').startsWith(VM_DIFFERS);
}

/** One snippet as an EVAL command (argv). */
export function luaSnippet(r: Random): string[] {
  const [lua, keyCount, args] = r.pick(SNIPPETS);
  const keys = Array.from({ length: keyCount }, () => r.pick(KEYS));
  return ['EVAL', lua, String(keyCount), ...keys, ...args(r)];
}
