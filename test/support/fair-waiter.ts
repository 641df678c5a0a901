/** A fair waiter in its own process, to be SIGKILLed by a test: prints "waiting" once in line. */
import { Locker } from '../../src/index.js';

const [resource = 'r', ...urls] = process.argv.slice(2);
const locker = new Locker({ nodes: urls });
locker.events.once('retry', () => process.stdout.write('waiting\n'));
await locker.acquire(resource, { ttlMs: 100_000, waitMs: 60_000, fair: true });
