import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reapLeftoverServers } from '../src/testing/index.js';
import { isRunning } from './support/processes.js';

/**
 * Every redis-server the harness starts logs its pid here; after the whole suite each of
 * them must be gone. A survivor is killed (by pid) and fails the run.
 */
const log = join(tmpdir(), `distlock-test-pids-${process.pid}`);

export function setup(): void {
  // Nodes of an earlier run whose process was killed outright (SIGKILL, OOM) would linger.
  const reaped = reapLeftoverServers();
  if (reaped.dirs > 0) {
    console.log(
      `reaped ${reaped.servers} redis-server(s) and ${reaped.dirs} temp dir(s) of a killed run`,
    );
  }
  writeFileSync(log, '');
  process.env.DISTLOCK_TEST_PID_LOG = log;
}

export function teardown(): void {
  const pids = readFileSync(log, 'utf8').split('\n').filter(Boolean).map(Number);
  rmSync(log, { force: true });
  const survivors = pids.filter(isRunning);
  for (const pid of survivors) process.kill(pid, 'SIGKILL');
  if (survivors.length > 0) {
    throw new Error(`redis-server processes left running after the suite: ${survivors.join(', ')}`);
  }
  console.log(`harness check: ${pids.length} redis-server process(es) started, none left running`);
}
