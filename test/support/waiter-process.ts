/**
 * A waiter in its own process, to be SIGKILLed by a test: prints "waiting" once in line.
 * Arguments: resource, `fair` or `plain`, node URLs.
 */
import { Locker } from '../../src/index.js';

const [resource = 'r', mode = 'fair', ...urls] = process.argv.slice(2);
const locker = new Locker({ nodes: urls });
locker.events.once('retry', () => process.stdout.write('waiting\n'));
await locker.acquire(resource, { ttlMs: 100_000, waitMs: 60_000, fair: mode === 'fair' });
