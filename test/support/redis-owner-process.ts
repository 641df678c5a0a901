/**
 * Starts one node with the testing kit and prints `{"pid":…,"dir":…}`. With `hold`, it then
 * runs until killed (an owner that may die with SIGKILL); with `once`, it stops the node and
 * exits (a later process, whose first start reaps what dead owners left).
 */
import { startRedis } from '../../src/testing/index.js';

const redis = await startRedis();
const node = redis.nodes[0];
process.stdout.write(`${JSON.stringify({ pid: node?.pid, dir: node?.dir })}\n`);
if (process.argv[2] === 'once') {
  await redis.stop();
} else {
  setInterval(() => {}, 60_000);
}
