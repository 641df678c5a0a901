/** A fleet member for the schedule test: prints one JSON line per tick outcome. */
import { Locker, schedule } from '../../src/index.js';

const [url = '', name = 'tick'] = process.argv.slice(2);
const locker = new Locker({ nodes: [url] });
const job = schedule(
  locker,
  name,
  '* * * * * *',
  {
    lockAtMostFor: 900,
    lockAtLeastFor: 800,
    onTick: (outcome, scheduledAt) =>
      process.stdout.write(
        `${JSON.stringify({ pid: process.pid, outcome, tick: scheduledAt.toISOString() })}\n`,
      ),
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
