// A fleet member for the node-cron test: the real node-cron, a 1-second `distributed` task
// coordinated by distlock as a user installs it (the built package, through its
// `distlock/node-cron` export), one JSON line per event on stdout: `ready`, the `start` of a
// fire, a fire `skipped` (and why), `missed`, and what node-cron logged.
//
// argv: the task name, how long each fire's job runs (ms), node-cron's `distributedLease`
// (ms), then the Redis URLs (one, or several for Redlock).
import { writeSync } from 'node:fs';
import { Locker } from 'distlock';
import { runCoordinator } from 'distlock/node-cron';
import cron from 'node-cron';

const [name, jobMs, leaseMs, ...urls] = process.argv.slice(2);
let stopping = false;
// A line written at once (no buffering), so that one written just before a SIGKILL is read.
// A member whose test is gone (its stdout closed) exits: left running, it would take the
// fires of a later run whose Redis reuses a port.
const say = (event) => {
  try {
    writeSync(1, `${JSON.stringify({ pid: process.pid, stopping, ...event })}\n`);
  } catch {
    process.exit(1);
  }
};

// A generous node timeout: a loaded machine must not turn a slow reply into a skipped fire.
const locker = new Locker({ nodes: urls, nodeTimeoutMs: 200 });
// Ready once a quorum of this member's nodes answers: a fresh process is still connecting
// (and learning which server each node is) when it starts, and would skip its first fires.
for (;;) {
  const warmUp = await locker.tryAcquire(`warm-up:${process.pid}`, { ttlMs: 1_000 }).then(
    (lock) => lock?.release(),
    () => new Promise((resolve) => setTimeout(resolve, 50, 'retry')),
  );
  if (warmUp !== 'retry') break;
}
const task = cron.schedule(
  '* * * * * *',
  async ({ date }) => {
    say({ event: 'start', fire: date.toISOString() });
    await new Promise((resolve) => setTimeout(resolve, Number(jobMs)));
  },
  {
    name,
    distributed: true,
    distributedLease: Number(leaseMs),
    runCoordinator: runCoordinator(locker),
    logger: {
      info: () => {},
      debug: () => {},
      warn: (message) => say({ event: 'warn', message }),
      error: (message, error) => say({ event: 'error', message: `${message}`, error: `${error}` }),
    },
  },
);
task.on('execution:skipped', ({ date, reason }) => {
  say({ event: 'skipped', fire: date.toISOString(), reason });
});
task.on('execution:missed', ({ date }) => say({ event: 'missed', fire: date.toISOString() }));
say({ event: 'ready' });

process.once('SIGTERM', async () => {
  stopping = true;
  await cron.shutdown(2 * Number(jobMs)); // stops the task and lets a running fire end
  await locker.close();
  process.exit(0);
});
