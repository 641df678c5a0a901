import { describe, expect, it } from 'vitest';
import { formatDuration, humanDuration, parseDuration } from '../../src/cli/duration.js';
import { requireCommandAfterDashes, runTarget } from '../../src/cli/run-arguments.js';

describe('CLI durations', () => {
  it.each([
    ['30', 30_000],
    ['0.5', 500],
    ['.25', 250],
    ['1.5s', 1_500],
    ['500ms', 500],
    ['5m', 300_000],
    ['1h', 3_600_000],
    [' 2 ', 2_000],
  ])('reads %j as %d ms (a bare number is seconds)', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it('takes 0 only where it means "not at all"', () => {
    expect(parseDuration('0', { zero: true })).toBe(0);
    expect(() => parseDuration('0')).toThrow(/"0" is not positive/);
    expect(() => parseDuration('0.0001')).toThrow(/not positive/); // rounds to 0 ms
  });

  it.each(['', '-1', '1d', '5 s', 's', '1e3', 'Infinity'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });

  it('rejects what a timer cannot hold', () => {
    expect(() => parseDuration('600h')).toThrow(/too long/);
  });

  it.each([
    [600_000, '10m'],
    [7_200_000, '2h'],
    [30_000, '30s'],
    [1_500, '1.5s'],
    [250, '250ms'],
    [0, '0ms'],
  ])('writes %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text, { zero: true })).toBe(ms);
  });

  it.each([
    [850, '850 ms'],
    [1_000, '1 s'],
    [59_999, '59.9 s'], // rounded down: never more than is left
    [60_000, '1 min'],
    [599_842, '9 min 59.8 s'],
    [3_600_000, '1 h'],
    [7_530_000, '2 h 5 min'],
  ])('tells %d ms as %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });
});

describe("distlock run's arguments (flock's forms)", () => {
  it.each([
    [['nightly', './backup.sh', '-v'], {}, ['nightly', './backup.sh', ['-v']]],
    [['nightly', '--', './backup.sh'], {}, ['nightly', './backup.sh', []]],
    [['nightly', '--', '-c', 'x'], {}, ['nightly', '-c', ['x']]],
    [['nightly', '-c', 'a | b'], {}, ['nightly', '/bin/sh', ['-c', 'a | b']]],
    [['nightly', '--command', 'a'], {}, ['nightly', '/bin/sh', ['-c', 'a']]],
    [['nightly'], { command: 'a' }, ['nightly', '/bin/sh', ['-c', 'a']]],
    [['./backup.sh', 'now'], { key: 'nightly' }, ['nightly', './backup.sh', ['now']]],
    [[], { key: 'nightly', command: 'a' }, ['nightly', '/bin/sh', ['-c', 'a']]],
  ] as const)('reads %j with %j', (positionals, options, [key, command, args]) => {
    expect(runTarget(positionals, options)).toEqual({ key, command, args });
  });

  it.each([
    [[], {}, /missing the key/],
    [['nightly'], {}, /missing the command/],
    [['nightly', '--'], {}, /missing the command/],
    [[], { key: 'nightly' }, /missing the command/],
    [['nightly', '-c'], {}, /-c needs a shell command/],
    [['nightly', '-c', 'a', 'b'], {}, /-c takes one shell command/],
    [['nightly', 'b'], { command: 'a' }, /-c takes one shell command/],
    [['nightly', '-c', 'a'], { command: 'b' }, /-c given twice/],
    [['nightly', '--wait', '5', './backup.sh'], {}, /"--wait" follows the key/],
  ] as const)('rejects %j with %j', (positionals, options, message) => {
    expect(() => runTarget(positionals, options)).toThrow(message);
  });
});

describe("distlock cron's command, after --", () => {
  // [the command line as typed, then the command and arguments as commander read them]
  it.each([
    [['cron', '* * * * *', '--key', 'k', '--', 'ls', '-la'], 'ls', ['-la']],
    [['cron', '--key', 'k', '* * * * *', '--', 'true'], 'true', []],
    [['cron', '* * * * *', '--key', 'k', '--', 'a', '--', 'b'], 'a', ['--', 'b']],
    [['cron', '* * * * *', '--key', '--', '--', 'true'], 'true', []], // a key named "--"
  ] as const)('takes %j', (typed, command, args) => {
    expect(() => requireCommandAfterDashes(typed, command, args)).not.toThrow();
  });

  it.each([
    // "--grace 1" taken as distlock's: the job would be a bare echo.
    [['cron', '* * * * *', '--key', 'k', 'echo', '--grace', '1'], 'echo', []],
    [['cron', '* * * * *', '--key', 'k', 'true'], 'true', []],
    [['cron', '* * * * *', '--key', 'k', 'echo', '--', 'a'], 'echo', ['a']],
    [['cron', '* * * * *', '--key', 'k', 'true', '--'], 'true', []],
    [['cron', '--key', 'k', '--', '* * * * *', 'true'], 'true', []],
  ] as const)('refuses %j', (typed, command, args) => {
    expect(() => requireCommandAfterDashes(typed, command, args)).toThrow(
      /put the command after --/,
    );
  });
});
