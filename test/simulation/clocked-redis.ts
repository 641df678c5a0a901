/**
 * A real redis-server whose wall clock the test sets: clock-shim.c, compiled here once per
 * run with the machine's C compiler, is preloaded into it and reads the time from a file.
 * Set the clock, send a command, and the server's TIME, expiry and TTLs are exactly those
 * the simulated node computes from the same reading.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisServer } from '../../src/testing/index.js';

export interface ClockedRedis {
  readonly server: RedisServer;
  /** Sets the server's wall clock (µs since the epoch). */
  setClock(us: bigint): void;
  stop(): Promise<void>;
}

const SHIM = fileURLToPath(new URL('./clock-shim.c', import.meta.url));

/** Starts a redis-server reading its wall clock from the test, at `startUs`. */
export async function startClockedRedis(startUs: bigint): Promise<ClockedRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'distlock-clocked-'));
  const library = join(dir, 'clock-shim.so');
  try {
    execFileSync('cc', ['-O2', '-shared', '-fPIC', '-o', library, SHIM], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not compile ${SHIM} (a C compiler, \`cc\`, is needed)`, {
      cause: error,
    });
  }
  const clockFile = join(dir, 'clock');
  const clock = openSync(clockFile, 'w+');
  const buffer = Buffer.alloc(8);
  const setClock = (us: bigint) => {
    buffer.writeBigInt64LE(us);
    writeSync(clock, buffer, 0, 8, 0);
  };
  setClock(startUs);
  const wrapper = join(dir, 'redis-server');
  writeFileSync(
    wrapper,
    `#!/bin/sh\nLD_PRELOAD='${library}' DISTLOCK_CLOCK_FILE='${clockFile}' exec redis-server "$@"\n`,
    { mode: 0o755 },
  );
  // DEBUG (loopback only) lets the test turn off active expiry (see differential.test.ts).
  const server = await RedisServer.start({
    binary: wrapper,
    args: ['--enable-debug-command', 'local'],
  });
  return {
    server,
    setClock,
    async stop() {
      await server.stop();
      closeSync(clock);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
