// Type-checked as an ES module consumer: `import` must resolve to dist/esm and its types.
import { LockError, Locker } from 'distlock';
import { openTelemetry } from 'distlock/opentelemetry';
import { startRedis } from 'distlock/testing';

const locker: Locker = new Locker({
  nodes: ['redis://127.0.0.1:6379'],
  telemetry: openTelemetry(),
});
const isLockError: boolean = new Error() instanceof LockError;

export { isLockError, locker, startRedis };
