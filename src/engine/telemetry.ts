import type { HoldInfo, LockTelemetry, OperationEnd } from '../config/telemetry.js';

/** Runs `work` as operation `name` of `telemetry`, ending it with what `describe` says. */
export function traced<T>(
  telemetry: LockTelemetry,
  name: 'acquire' | 'extend' | 'release',
  hold: HoldInfo,
  work: () => Promise<T>,
  describe: { ok: (value: T) => OperationEnd; failed: (error: unknown) => OperationEnd },
): Promise<T> {
  const operation = telemetry.start(name, hold);
  return operation.run(work).then(
    (value) => {
      operation.end(describe.ok(value));
      return value;
    },
    (error: unknown) => {
      operation.end(describe.failed(error));
      throw error;
    },
  );
}
