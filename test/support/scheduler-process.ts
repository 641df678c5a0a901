/** A fleet member for the schedule test: prints one JSON line per tick outcome. */
import { Locker, schedule } from '../../src/index.js';

const [url = '', name = 'tick'] = process.argv.slice(2);
// A generous node timeout: a loaded CI machine must not turn a slow reply into a failed tick.
const locker = new Locker({ nodes: [url], nodeTimeoutMs: 200 });
const job = schedule(
  locker,
  name,
  '* * * * * *',
  {
    lockAtMostFor: 900,
    lockAtLeastFor: 800,
    onTick: (outcome, scheduledAt, error) => {
      const tick = scheduledAt.toISOString();
      const detail = error === undefined ? {} : { error: String(error) };
      process.stdout.write(`${JSON.stringify({ pid: process.pid, outcome, tick, ...detail })}\n`);
    },
  },
  async () => {
    await new Promise((resolve) => setTimeout(resolve, 50)); // a short job
  },
);
process.once('SIGTERM', async () => {
  await job.stop();
  await locker.close();
  process.exit(0);
});
