// Type-checked as a CommonJS consumer: `require` must resolve to dist/cjs and its types.
import distlock = require('distlock');
import testing = require('distlock/testing');

const locker: distlock.Locker = new distlock.Locker({ nodes: ['redis://127.0.0.1:6379'] });
export = { locker, startRedis: testing.startRedis };
