// Type-checked as a CommonJS consumer: `require` must resolve to dist/cjs and its types.
import distlock = require('distlock');
import testing = require('distlock/testing');
import otel = require('distlock/opentelemetry');

const locker: distlock.Locker = new distlock.Locker({
  nodes: ['redis://127.0.0.1:6379'],
  telemetry: otel.openTelemetry(),
});
export = { locker, startRedis: testing.startRedis };
