import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/options.js';
import { freePort } from '../../src/testing/ports.js';
import { readmeExamples } from '../consumers/readme-examples.js';
import { readPage } from '../support/documentation.js';
import { installedVersion, NODE, OTHER_RUNTIMES, runScript } from '../support/runtimes.js';

/** How long one example may run (the slowest, failover.mjs, takes about 6 s). */
const EXAMPLE_LIMIT_MS = 20_000;

/**
 * Runs one of examples/ as the README and docs/ say (against the built package) under Node,
 * Bun and Deno, one after the other (examples measure time: run side by side on two cores,
 * they would measure each other), and checks each one's lines with `check`; a failure names
 * the runtime.
 */
async function runEverywhere(file: string, check: (lines: string[]) => void): Promise<void> {
  for (const runtime of [NODE, ...OTHER_RUNTIMES]) {
    let lines: string[];
    try {
      lines = await runScript(runtime, `examples/${file}`, { timeoutMs: EXAMPLE_LIMIT_MS });
    } catch (error) {
      const { stderr } = error as { stderr?: string };
      throw new Error(`${file} under ${runtime.name} failed: ${stderr ?? String(error)}`);
    }
    try {
      check(lines);
    } catch (error) {
      throw new Error(
        `${file} under ${runtime.name}: ${(error as Error).message}\n${lines.join('\n')}`,
      );
    }
  }
}

const TEST_LIMIT_MS = 3 * EXAMPLE_LIMIT_MS;

describe('README examples, under Node, Bun and Deno', () => {
  it('the README names the Bun and Deno versions that run them', () => {
    const readme = readFileSync('README.md', 'utf8').replace(/\s+/g, ' ');
    const versions = `under Bun ${installedVersion('bun')} and Deno ${installedVersion('deno')}`;
    expect(readme).toContain(versions);
  });

  it("the README's quick start, with nothing at REDIS_URL, fails within a connect wait and says why in short", async () => {
    const quickStart = readmeExamples('README.md', readPage('README.md')).find((e) => e.runs);
    const address = `127.0.0.1:${await freePort()}`;
    const startedAt = performance.now();
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', quickStart?.code ?? ''], {
      encoding: 'utf8',
      env: { ...process.env, REDIS_URL: `redis://${address}` },
      timeout: 2 * DEFAULTS.waitMs,
    });
    // Before: it retried for the default waitMs of its acquire.
    expect(performance.now() - startedAt).toBeLessThan(DEFAULTS.waitMs);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`NoQuorumError: No quorum for "invoice:42"`);
    expect(run.stderr).toContain(`Gave up early: ${address} never answered`);
    expect(run.stderr).toContain(`connect ECONNREFUSED ${address}`);
    expect(run.stderr).toContain('`startupWaitMs`');
    // Each node's error is printed once, without distlock's frames: before, twice with them.
    expect(run.stderr).not.toMatch(/^\s*nodes: \[/m);
    // (The bundle keeps function names: the driver's frames are its adapter's and `notSent`.)
    expect(run.stderr).not.toMatch(/^\s*at .*\b(IORedisConnection|notSent)\b/m);
    expect(run.stderr.match(/NotSentError: not connected/g)).toHaveLength(1);
  });

  it(
    'quickstart.mjs runs and prints what the README says',
    () =>
      runEverywhere('quickstart.mjs', (lines) => {
        const [holding, ...rest] = lines;
        expect(holding).toMatch(/^holding invoice:42 for 9\d{3} ms$/);
        expect(rest).toEqual([
          'second try while held: null',
          'release: released',
          'release again: not-held',
          'after release: invoice:42',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'fencing.mjs refuses the write of a holder that stalled past its lease',
    () =>
      runEverywhere('fencing.mjs', (lines) => {
        expect(lines).toEqual([
          'slow holder: fence 1n read null',
          'next holder: fence 2n',
          'next holder writes: applied',
          'slow holder writes: stale',
          'stored: 120',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'cluster.mjs locks on every shard, and on the others while one master is stopped',
    () =>
      runEverywhere('cluster.mjs', (lines) => {
        expect(lines.slice(0, 3)).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/^invoice:\d+ locked on the master at port \d+: fence \d+$/),
          ]),
        );
        const ports = new Set(lines.slice(0, 3).map((line) => /port (\d+)/.exec(line)?.[1]));
        expect(ports.size).toBe(3);
        expect(lines[3]).toMatch(/^invoice:\d+ while its master is stopped: NO_QUORUM$/);
        expect(lines.slice(4)).toEqual([
          expect.stringMatching(/^invoice:\d+ meanwhile: released$/),
          expect.stringMatching(/^invoice:\d+ meanwhile: released$/),
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'semaphore.mjs runs at most 2 jobs at once, and frees crashed permits at their TTL',
    () =>
      runEverywhere('semaphore.mjs', (lines) => {
        expect(lines).toEqual([
          '5 jobs, at most running at once: 2',
          'third permit while two are held: null',
          'after their TTL: granted',
          'release: released',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'read-write.mjs lets readers share, and serves a waiting writer before a later reader',
    () =>
      runEverywhere('read-write.mjs', (lines) => {
        expect(lines).toEqual([
          'two readers at once: true',
          'late reader got in before the writer: false',
          'order: writer, late reader',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'acquire-all.mjs runs two transfers in opposite orders without deadlock',
    () =>
      runEverywhere('acquire-all.mjs', (lines) => {
        expect(lines).toEqual([
          'both transfers done, each locked account:1 and account:2',
          'while account:2 is held: LOCK_BUSY account:2',
          'account:1 left free: true',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'telemetry.mjs reports spans and metrics to the OpenTelemetry SDK',
    () =>
      runEverywhere('telemetry.mjs', (lines) => {
        expect(lines).toEqual([
          'spans: lock.acquire, lock.acquire, lock.release, lock.release',
          'first acquire: acquired report',
          'metrics: distlock.acquire.duration, distlock.hold.duration, distlock.holds',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'node-cron.mjs runs each fire of a node-cron task on one of three instances',
    () =>
      runEverywhere('node-cron.mjs', (lines) => {
        expect(lines).toEqual([
          'a fire ran on 1 of 3 instances; skipped (not-elected), skipped (not-elected)',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'failover.mjs keeps a lock through a Sentinel failover with replicaAcks',
    () =>
      runEverywhere('failover.mjs', (lines) => {
        expect(lines).toEqual([
          'node: sentinel orders (sentinels)',
          'failed over: true',
          'rival after the failover: LOCK_BUSY',
          'holder releases: released',
        ]);
      }),
    TEST_LIMIT_MS,
  );

  it(
    'lifecycle.mjs shows auto-extension, events and a loud loss',
    () =>
      runEverywhere('lifecycle.mjs', (lines) => {
        expect(lines).toEqual([
          'acquired report after 1 attempt(s)',
          'report done',
          'acquired invoice:42 after 1 attempt(s)',
          'lost invoice:42 - LOCK_LOST',
          'signal reason: LockLostError',
        ]);
      }),
    TEST_LIMIT_MS,
  );
});

describe('examples/unit-tests: a service tested with InMemoryRedis, no server', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, args, { encoding: 'utf8', timeout: EXAMPLE_LIMIT_MS });

  it('passes under vitest, with its fake timers', () => {
    const vitest = 'node_modules/vitest/vitest.mjs';
    const out = run([vitest, 'run', '--config', 'examples/unit-tests/vitest.config.mjs']);
    expect(out.status, out.stdout + out.stderr).toBe(0);
    expect(out.stdout).toMatch(/Tests\s+.*2 passed/);
  });

  it('passes under node:test, with @sinonjs/fake-timers', () => {
    const out = run(['--test', 'examples/unit-tests/invoice.node-test.mjs']);
    expect(out.status, out.stdout + out.stderr).toBe(0);
    expect(out.stdout).toContain('# pass 2');
  });
});
