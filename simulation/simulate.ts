/**
 * Runs schedules of the simulation and reports the ones whose history breaks the oracle.
 *
 *   npm run simulate -- --seeds 200            200 schedules, from a random first seed
 *   npm run simulate -- --minutes 5            as many as fit in 5 minutes
 *   npm run simulate -- --seeds 200 --from 1   seeds 1 to 200
 *   npm run simulate -- --seed 1234            replays one seed and prints its history
 *
 *   SIM_AUTO_EXTEND=1 npm run simulate ...    some acquisitions extend automatically
 *
 * Exits 1 when a schedule failed; each failure prints its seed and the command replaying it.
 */
import { runSchedule as run } from './schedule.js';

const autoExtend = process.env.SIM_AUTO_EXTEND === '1';
const runSchedule = (seed: number) => run(seed, { autoExtend });

interface Arguments {
  seeds?: number;
  minutes?: number;
  from?: number;
  seed?: number;
}

function parse(argv: readonly string[]): Arguments {
  const parsed: Arguments = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]?.replace(/^--/, '');
    const value = Number(argv[i + 1]);
    if (name !== 'seeds' && name !== 'minutes' && name !== 'from' && name !== 'seed') {
      throw new Error(`Unknown option ${argv[i]}: expected --seeds, --minutes, --from or --seed`);
    }
    if (!Number.isFinite(value) || value < 0) {
      throw new Error(`Expected --${name} to be a number >= 0, got ${argv[i + 1]}`);
    }
    parsed[name] = value;
  }
  return parsed;
}

async function replay(seed: number): Promise<number> {
  const result = await runSchedule(seed);
  console.log(result.log.join('\n'));
  for (const violation of result.violations) console.log(`VIOLATION ${violation}`);
  return result.violations.length === 0 ? 0 : 1;
}

async function explore({ seeds, minutes, from }: Arguments): Promise<number> {
  const first = from ?? Math.floor(Math.random() * 2 ** 31);
  const until = minutes === undefined ? Number.POSITIVE_INFINITY : Date.now() + minutes * 60_000;
  const count = seeds ?? (minutes === undefined ? 100 : Number.POSITIVE_INFINITY);
  const started = Date.now();
  let done = 0;
  let failed = 0;
  let holdings = 0;
  let shownAt = 0;
  const progress = (final = false) => {
    const seconds = (Date.now() - started) / 1000;
    const line = `${done} schedules, ${(done / seconds).toFixed(1)}/s, ${holdings} holdings, ${failed} failed`;
    if (process.stderr.isTTY) process.stderr.write(`\r${line}${final ? '\n' : ''}`);
    else if (final || Date.now() - shownAt > 5_000) process.stderr.write(`${line}\n`);
    shownAt = Date.now();
  };
  console.log(`seeds from ${first}`);
  for (let seed = first; done < count && Date.now() < until; seed++) {
    const result = await runSchedule(seed);
    done += 1;
    holdings += result.holdings;
    if (result.violations.length > 0) {
      failed += 1;
      if (process.stderr.isTTY) process.stderr.write('\n');
      console.log(`FAILED seed ${seed} (schedule ${done}):`);
      for (const violation of result.violations) console.log(`  ${violation}`);
      const env = autoExtend ? 'SIM_AUTO_EXTEND=1 ' : '';
      console.log(`  replay: ${env}npm run simulate -- --seed ${seed}`);
    }
    if (process.stderr.isTTY || Date.now() - shownAt > 5_000) progress();
  }
  progress(true);
  return failed === 0 ? 0 : 1;
}

const options = parse(process.argv.slice(2));
process.exitCode = await (options.seed === undefined ? explore(options) : replay(options.seed));
