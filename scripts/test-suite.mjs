/**
 * `npm test`'s vitest part: every test file, one after another as vitest.config.ts asks,
 * and beside them the simulation's seeds (test/simulation/engine.test.ts) in a vitest of
 * their own on one worker thread. The seeds are pure computation and never touch a clock or
 * a socket, while the other files mostly wait on real servers and timers; side by side they
 * take the time of the longer one instead of the sum (on a 2-core machine about 2.5 minutes
 * less). The seeds' output is printed after the other files', so neither interleaves.
 * Exits non-zero when either fails. Arguments are passed to the first vitest.
 */
import { spawn } from 'node:child_process';

const SEEDS = 'test/simulation/engine.test.ts';
const vitest = new URL('../node_modules/vitest/vitest.mjs', import.meta.url).pathname;

/** Runs vitest with `args`; resolves its exit code (and its output, when captured). */
function run(args, { capture = false, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [vitest, 'run', ...args], {
      stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      env: { ...process.env, ...env },
    });
    let output = '';
    if (capture) {
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr.on('data', (chunk) => {
        output += chunk;
      });
    }
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

const seeds = run([SEEDS], { capture: true, env: { SIM_WORKERS: '1' } });
const rest = await run(['--exclude', SEEDS, ...process.argv.slice(2)]);
const simulated = await seeds;
process.stdout.write(`\n${SEEDS}, beside the other files:\n${simulated.output}`);
process.exit(rest.code !== 0 ? rest.code : simulated.code);
