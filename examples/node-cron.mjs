// Runnable: `npm run build && node examples/node-cron.mjs` (with node-cron installed).
// Three instances of one node-cron task, each with its own Locker, as three replicas of a
// service would run it: distlock's coordinator lets each fire run on exactly one of them.

import { Locker } from 'distlock';
import { runCoordinator } from 'distlock/node-cron';
import { startRedis } from 'distlock/testing';
import cron from 'node-cron';

const redis = await startRedis();
const lockers = [1, 2, 3].map(() => new Locker({ nodes: redis.urls }));

try {
  const fires = new Map(); // fire's ISO instant -> what each instance did with it
  const told = (date, what) => {
    const fire = date.toISOString();
    fires.set(fire, [...(fires.get(fire) ?? []), what]);
  };
  let check;
  const firstFire = new Promise((resolve) => {
    // Settled once all three instances told what they did with one fire.
    check = () => {
      const whole = [...fires.values()].find((said) => said.length === 3);
      if (whole) resolve(whole);
    };
  });
  for (const locker of lockers) {
    const task = cron.schedule('* * * * * *', ({ date }) => told(date, 'ran'), {
      name: 'report', // names each fire's lock, the same on every instance
      distributed: true,
      distributedLease: 10_000, // a fire's lockAtMostFor
      runCoordinator: runCoordinator(locker, { lockAtLeastFor: 5_000 }),
    });
    task.on('execution:finished', () => check());
    task.on('execution:skipped', ({ date, reason }) => {
      told(date, `skipped (${reason})`);
      check();
    });
  }
  const said = await firstFire;
  const ran = said.filter((what) => what === 'ran').length;
  const skipped = said.filter((what) => what !== 'ran');
  console.log(`a fire ran on ${ran} of 3 instances; ${skipped.join(', ')}`);
} finally {
  await cron.shutdown();
  await Promise.all(lockers.map((locker) => locker.close()));
  await redis.stop();
}
