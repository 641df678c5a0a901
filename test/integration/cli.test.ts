import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  distlock,
  killAll,
  lockHeld,
  longestPttl,
  nodesWith,
  pidWrittenTo,
  redisArgs,
  stopsRunning,
  watchKey,
  withBackgroundSleep,
} from '../support/cli.js';
import { useLockers, useRedis } from '../support/redis.js';

// `distlock run` and what all subcommands share (--version, usage errors); `status` and
// `cron` have files of their own.
const fixture = useRedis(3);
const locker = useLockers(fixture);
const nodes = () => redisArgs(fixture());
const dir = mkdtempSync(join(tmpdir(), 'distlock-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Pids that commands under test started; whatever still runs after a test is killed. */
const started: number[] = [];
afterEach(() => killAll(started));

/** `distlock run` on a short, auto-extended lease, for tests that then lose the lock. */
const runUntilLost = (...command: string[]) =>
  distlock([
    'run',
    '--key',
    'job',
    '--ttl',
    '600ms',
    '--grace',
    '1s',
    ...nodes(),
    '--',
    ...command,
  ]);

/** This process's process group (Linux: the 5th field of /proc/self/stat). */
function ownProcessGroup(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** A URL on which nothing listens: a node of the fixture, killed. */
async function deadNode(index: number): Promise<string> {
  const node = fixture().redis.nodes[index];
  if (!node) throw new Error(`the fixture has no node ${index}`);
  await node.kill();
  return `redis://127.0.0.1:${node.port}`;
}

describe('distlock run', () => {
  it("passes the command's output and exit code through", async () => {
    const { code, stdout } = await distlock([
      'run',
      '--key',
      'job',
      ...nodes(),
      '--',
      'sh',
      '-c',
      'echo hello; exit 3',
    ]).done;
    expect(stdout).toBe('hello\n');
    expect(code).toBe(3);
  });

  it('takes the key as its first argument, as flock takes its file', async () => {
    const run = distlock(['run', ...nodes(), 'nightly', 'sh', '-c', 'sleep 0.5; echo done']);
    await lockHeld(fixture(), 'distlock:{nightly}');
    const { code, stdout } = await run.done;
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'done\n' });
    expect(await nodesWith(fixture(), 'distlock:{nightly}')).toBe(0); // released
  });

  it.each([
    ['after the key (flock)', ['nightly', '-c']],
    ['as an option, with --key', ['--key', 'nightly', '-c']],
  ])('runs -c <shell-command> through /bin/sh, not $SHELL, %s', async (_, form) => {
    const { code, stdout } = await distlock(
      ['run', ...nodes(), ...form, 'echo "$0"; echo a | tr a b; exit 4'],
      { SHELL: '/no/such/shell' },
    ).done;
    expect(stdout).toBe('/bin/sh\nb\n');
    expect(code).toBe(4);
  });

  it('reads a bare number as seconds: --ttl 30 is a 30 s lease', async () => {
    const run = distlock(['run', '--key', 'job', '--ttl', '30', ...nodes(), '--', 'sleep', '1']);
    await lockHeld(fixture(), 'distlock:{job}');
    expect(await longestPttl(fixture(), 'distlock:{job}')).toBeGreaterThan(20_000);
    expect((await run.done).code).toBe(0);
  });

  it.each([['-w'], ['--wait']])('waits %s 5 seconds, not 5 ms', async (flag) => {
    const held = await locker().acquire('job', { ttlMs: 10_000 });
    const tried = await watchKey(fixture(), 'distlock:{job}');
    const run = distlock(['run', flag, '5', '--key', 'job', ...nodes(), '--', 'true']);
    await tried(); // distlock found the lock busy: a wait of 5 ms ends here, in exit 75
    await delay(1_000);
    expect(run.child.exitCode).toBe(null); // still waiting
    await held.release();
    expect((await run.done).code).toBe(0); // got the lock once it was released
  });

  it.each([[['--no-wait']], [['-n']], [['--nonblock']], [['--wait', '0']], [['-w', '0']]])(
    'exits 75 at once, without running the command, when the lock is busy and %j',
    async (flags) => {
      const held = await locker().acquire('job', { ttlMs: 10_000 });
      const marker = join(dir, 'ran');
      const startedAt = performance.now();
      const run = distlock(['run', ...flags, '--key', 'job', ...nodes(), '--', 'touch', marker]);
      const { code, stderr } = await run.done;
      expect(code).toBe(75);
      expect(stderr).toMatch(/locked by another holder/);
      expect(performance.now() - startedAt).toBeLessThan(8_000); // not the 10 s default wait
      expect(() => readFileSync(marker)).toThrow();
      await held.release();
    },
  );

  it('exits with the code given by -E when the lock is busy', async () => {
    const held = await locker().acquire('job', { ttlMs: 10_000 });
    const run = distlock(['run', '-n', '-E', '9', '--key', 'job', ...nodes(), '--', 'true']);
    const { code } = await run.done;
    expect(code).toBe(9);
    await held.release();
  });

  it('takes the Redis nodes from DISTLOCK_REDIS', async () => {
    const env = { DISTLOCK_REDIS: fixture().redis.urls.join(',') };
    const held = await locker().acquire('env-job', { ttlMs: 10_000 });
    const { code } = await distlock(['run', '--key', 'env-job', '--no-wait', '--', 'true'], env)
      .done;
    expect(code).toBe(75);
    await held.release();
  });

  it.each([
    ['127 for a command that is not found', 127, () => join(dir, 'missing'), /: command not found/],
    ['126 for a file that is not executable', 126, notExecutable, /: permission denied/],
    [
      '126 for a script whose #! interpreter is missing',
      126,
      missingInterpreter,
      /: cannot execute: its interpreter \(the #! line\) was not found/,
    ],
  ])('exits %s, as shells do, and releases the lock', async (_, expected, file, message) => {
    const { code, stderr } = await distlock(['run', '--key', 'job', ...nodes(), '--', file()]).done;
    expect(code).toBe(expected);
    expect(stderr).toMatch(message);
    expect(await nodesWith(fixture(), 'distlock:{job}')).toBe(0);
  });

  it("exits with the shell's 127 and 126 under -c", async () => {
    const notFound = await distlock(['run', ...nodes(), 'job', '-c', 'no-such-command-here']).done;
    expect(notFound.code).toBe(127);
    const notRunnable = await distlock(['run', ...nodes(), 'job', '-c', notExecutable()]).done;
    expect(notRunnable.code).toBe(126);
  });

  it('stops the command and exits 76 when the lock is lost', async () => {
    const file = join(dir, 'lost-command');
    const run = runUntilLost('sh', '-c', `echo $$ > ${file}; exec sleep 30`);
    // The command runs: the lock is held. (A fixed delay, then the key on one node, lost the
    // race on a loaded machine: the nodes were killed while the attempt was still going on.)
    await pidWrittenTo(file, started);
    const startedAt = performance.now();
    await Promise.all(
      fixture()
        .redis.nodes.slice(0, 2)
        .map((node) => node.kill()),
    );
    const { code, stderr } = await run.done;
    expect(code).toBe(76);
    expect(stderr).toMatch(/lost; stopping the command/);
    expect(performance.now() - startedAt).toBeLessThan(10_000); // not the 30 s of sleep
  });

  it('forwards SIGTERM to the command', async () => {
    const script =
      "process.on('SIGTERM', () => { console.log('got TERM'); process.exit(7); }); setInterval(() => {}, 1000); console.log('ready');";
    const run = distlock(['run', '--key', 'job', ...nodes(), '--', process.execPath, '-e', script]);
    const ready = new Promise<void>((resolve) =>
      run.child.stdout?.on('data', (c: Buffer) => c.toString().includes('ready') && resolve()),
    );
    const exited = run.done.then(({ code, stderr }) => {
      throw new Error(`distlock exited (${code}) before the command was ready: ${stderr}`);
    });
    await Promise.race([ready, exited]);
    run.child.kill('SIGTERM');
    const { code, stdout } = await run.done;
    expect(stdout).toContain('got TERM');
    expect(code).toBe(7);
  });

  it('stops what the command started, too, when the lock is lost', async () => {
    const file = join(dir, 'lost-grandchild');
    const run = runUntilLost('sh', '-c', withBackgroundSleep(file));
    const grandchild = await pidWrittenTo(file, started);
    await Promise.all(
      fixture()
        .redis.nodes.slice(0, 2)
        .map((node) => node.kill()),
    );
    const { code } = await run.done;
    expect(code).toBe(76);
    expect(await stopsRunning(grandchild)).toBe(true);
  });

  it('forwards SIGTERM to what the command started, too', async () => {
    const file = join(dir, 'term-grandchild');
    const run = distlock([
      'run',
      '--key',
      'job',
      ...nodes(),
      '--',
      'sh',
      '-c',
      withBackgroundSleep(file),
    ]);
    const grandchild = await pidWrittenTo(file, started);
    run.child.kill('SIGTERM');
    const { code } = await run.done;
    expect(code).toBe(143); // sh, ended by the forwarded SIGTERM
    expect(await stopsRunning(grandchild)).toBe(true);
  });

  it.each([
    ['its own process group', [], 'command'],
    ["distlock's process group with --foreground", ['--foreground'], 'distlock'],
  ] as const)('runs the command in %s', async (_, flags, leader) => {
    const { code, stdout } = await distlock([
      'run',
      '--key',
      'job',
      ...flags,
      ...nodes(),
      '--',
      'sh',
      '-c',
      'echo $$; cut -d " " -f 5 /proc/$$/stat',
    ]).done;
    expect(code).toBe(0);
    const [pid, group] = stdout.trim().split('\n').map(Number);
    // distlock itself runs in the process group of this test's process.
    expect(group).toBe(leader === 'command' ? pid : ownProcessGroup());
  });
});

describe('distlock run when Redis cannot be reached', () => {
  it('exits 69 at once, not after --wait, naming the cause and what to check', async () => {
    const url = await deadNode(0);
    const startedAt = performance.now();
    const run = distlock(['run', '--key', 'job', '--wait', '60s', '--redis', url, '--', 'true']);
    const { code, stderr } = await run.done;
    expect(code).toBe(69);
    expect(performance.now() - startedAt).toBeLessThan(15_000); // was the whole wait
    expect(stderr).toMatch(/ECONNREFUSED/);
    expect(stderr).toContain(`is Redis running at ${url.slice('redis://'.length)}`);
    expect(stderr).toMatch(/the nodes come from --redis/);
  });

  it('gives up at once when a majority refuses, and names DISTLOCK_REDIS', async () => {
    const [first, second] = [await deadNode(0), await deadNode(1)];
    const env = { DISTLOCK_REDIS: fixture().redis.urls.join(' ') };
    const startedAt = performance.now();
    const run = distlock(['run', '--key', 'job', '--wait', '60s', '--', 'true'], env);
    const { code, stderr } = await run.done;
    expect(code).toBe(69);
    expect(performance.now() - startedAt).toBeLessThan(15_000); // not the 60 s wait
    for (const url of [first, second]) expect(stderr).toContain(url.slice('redis://'.length));
    expect(stderr).toMatch(/the nodes come from DISTLOCK_REDIS/);
    expect(await fixture().admin[2]?.exists('distlock:{job}')).toBe(0); // nothing left behind
  });

  it('waits for nodes that are only paused, and gets the lock once they answer', async () => {
    const paused = fixture().redis.nodes.slice(0, 2);
    for (const node of paused) node.pause();
    const tried = await watchKey(fixture(), 'distlock:{job}', 2); // the node still answering
    // Without the lease records (the check off): the paused nodes were restarted by the
    // fixture after an earlier test killed them, are young and have no record of their own,
    // so they would abstain as nodes that may have restarted (node-identity.test.ts).
    const run = distlock(['run', '--key', 'job', '--wait', '8s', ...nodes(), '--', 'true'], {
      DISTLOCK_RESTART_GRACE: '0',
    });
    await tried();
    // Several attempts time out on the paused nodes (150 ms each, for the default 30 s TTL);
    // taking them for down nodes would end in exit 69 at the first.
    await delay(1_000);
    expect(run.child.exitCode).toBe(null);
    for (const node of paused) node.resume();
    const { code, stderr } = await run.done;
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

describe('distlock --version and usage errors', () => {
  it.each([['--version'], ['-V']])('%s prints the version of the package', async (flag) => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const { code, stdout } = await distlock([flag]).done;
    expect({ code, stdout }).toEqual({ code: 0, stdout: `${version}\n` });
  });

  it.each([
    [['run', '--key', 'k', '--ttl', '3x', '--', 'true'], /invalid duration "3x"/],
    [['run', '--key', 'k', '--ttl', '0', '--', 'true'], /duration "0" is not positive/],
    [['run', '--key', 'k', '--ttl', '1ms', '--', 'true'], /`--ttl` to be longer .*, got 1ms$/m],
    // A grace a timer cannot hold would fire SIGKILL after 1 ms.
    [['run', '--key', 'k', '--grace', '600h', '--', 'true'], /"600h" is too long/],
    [['run', '--redis', 'http://x', '--key', 'k', 'true'], /`--redis` to be a redis:\/\/ .*"http:/],
    [['run', '--key', '', '--', 'true'], /`--key` to be a non-empty/],
    [['run', '-E', '256', '--key', 'k', 'true'], /'-E, --conflict-exit-code <code>' .* 0 to 255/],
    [
      ['run', '-n', '-w', '5', '--key', 'k', 'true'],
      /'-n, --nonblock' cannot be used with .*--wait/,
    ],
    [['run', '--bogus', '--key', 'k', 'true'], /unknown option '--bogus'/],
    [['run'], /missing the key/],
    [['run', 'k'], /missing the command/],
    [['run', 'k', '--ttl', '5s', 'true'], /"--ttl" follows the key: put options before the key/],
    [['run', 'k', '-c', 'true', 'extra'], /-c takes one shell command/],
    [['status', '--redis', 'http://x', 'k'], /`--redis` to be a redis:\/\/ or rediss:\/\/ URL/],
    [['status', ''], /`<key>` to be a non-empty/],
    [['status', '--bogus', 'k'], /unknown option '--bogus'/],
    [
      ['cron', '* * * * *', '--key', 'k', '--at-least', '20m', '--', 'true'],
      /`--at-least` .*--at-most/,
    ],
    [['cron', 'x', '--key', 'k', '--', 'true'], /`<expression>` to be a valid cron expression/],
    [['cron', '* * * * *', '--', 'true'], /required option '--key <key>'/],
    // Without --, "--grace 1" would be distlock's, and the job a bare "echo".
    [['cron', '--key', 'k', '* * * * *', 'echo', '--grace', '1'], /put the command after --/],
    [['cron', '--key', 'k', '* * * * *', 'true'], /put the command after --/],
    [['cron', '--key', 'k', '* * * * *', 'ls', '-la'], /'-la' \(if it is the command's, put/],
  ])(
    'exits 2 with a one-line error and the usage of the subcommand for %j',
    async (args, message) => {
      const { code, stderr } = await distlock(args).done;
      expect(code).toBe(2);
      const [error, blank, usage] = stderr.split('\n');
      expect(error).toMatch(/^error: /);
      expect(error).toMatch(message);
      expect(blank).toBe('');
      expect(usage).toMatch(new RegExp(`^Usage: distlock ${args[0]} `));
    },
  );

  it('echoes a node URL without its password', async () => {
    const url = 'redis://user:s3cret@127.0.0.1:1';
    const args = ['run', '--redis', url, '--redis', url, '--key', 'k', '--', 'true'];
    const { code, stderr } = await distlock(args).done;
    expect(code).toBe(2);
    expect(stderr).toMatch(/`--redis` to be a node not listed before \(same as --redis #1/);
    expect(stderr).toContain('redis://user:***@127.0.0.1:1');
    expect(stderr).not.toContain('s3cret');
  });

  it.each([
    'redis://user:s3cret@127.0.0.1:notaport',
    'redis://user:s3cret@[bad',
    'redis://:s3@cret@127.0.0.1:x',
    'REDIS://user:s3/cret@127.0.0.1:x',
    'user:s3cret@127.0.0.1:6379', // no scheme: parses, with "user:" as the scheme
  ])('echoes a node URL that does not parse without its password: %s', async (url) => {
    for (const [args, env, name] of [
      [['--redis', url], {}, '--redis'],
      [[], { DISTLOCK_REDIS: url }, '$DISTLOCK_REDIS entry 1'],
    ] as const) {
      const { code, stdout, stderr } = await distlock(['status', 'k', ...args], env).done;
      expect(code).toBe(2);
      expect(stderr.split('\n')[0]).toMatch(`Expected \`${name}\` to be a redis://`);
      expect(stderr).toMatch(/^error: .*, got "[^"]*:\*\*\*@[^"]*"$/m);
      expect(`${stdout}${stderr}`).not.toMatch(/s3|cret/);
    }
  });

  it.each([
    ['a bad node', 'redis://127.0.0.1:1,foo://x', /entry 2` to be a redis:.*, got "foo:\/\/x"/],
    [
      'a duplicate',
      'redis://127.0.0.1:1 redis://127.0.0.1:1',
      /entry 2` .*same as \$DIS\w+ entry 1/,
    ],
  ])('names $DISTLOCK_REDIS, not --redis, for %s that came from there', async (_, env, message) => {
    const { code, stderr } = await distlock(['status', 'k'], { DISTLOCK_REDIS: env }).done;
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error: Expected `\$DISTLOCK_REDIS entry 2` /);
    expect(stderr.split('\n')[0]).toMatch(message);
    expect(stderr).not.toMatch(/--redis #/);
  });

  it('shows the top-level usage for an unknown subcommand', async () => {
    const { code, stderr } = await distlock(['frobnicate']).done;
    expect(code).toBe(2);
    expect(stderr).toMatch(/unknown command 'frobnicate'/);
    expect(stderr).toMatch(/^Usage: distlock \[options\] \[command\]/m);
  });
});

/** A file with a shell script in it, but not executable. */
/** An executable script whose `#!` interpreter does not exist. */
function missingInterpreter(): string {
  const file = join(dir, 'missing-interpreter.sh');
  writeFileSync(file, `#!${join(dir, 'no-such-shell')}\necho ran\n`);
  chmodSync(file, 0o755);
  return file;
}

function notExecutable(): string {
  const file = join(dir, 'not-executable.sh');
  writeFileSync(file, '#!/bin/sh\necho ran\n');
  chmodSync(file, 0o644);
  return file;
}
