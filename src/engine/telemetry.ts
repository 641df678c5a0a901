import type { HoldInfo, LockTelemetry, OperationEnd } from '../config/telemetry.js';
import type { ReleaseOutcome } from './release.js';

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

/**
 * A release as one span: it ends once every node answered (the failures of those that did not
 * count too), while the release itself resolves as soon as its outcome is known.
 */
export function tracedRelease(
  telemetry: LockTelemetry,
  hold: HoldInfo,
  release: () => Promise<ReleaseOutcome>,
): Promise<ReleaseOutcome> {
  const operation = telemetry.start('release', hold);
  return operation.run(release).then(
    (outcome) => {
      const outcomeName = outcome.result.replace('-', '_');
      const end = (nodes: ReleaseOutcome['nodes']) =>
        operation.end({ outcome: outcomeName, nodes });
      if (outcome.everyNode) outcome.everyNode.then(end);
      else end(outcome.nodes);
      return outcome;
    },
    (error: unknown) => {
      operation.end({ outcome: 'error', error: error as Error });
      throw error;
    },
  );
}
