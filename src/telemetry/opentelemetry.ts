import {
  type Attributes,
  context,
  type Meter,
  type MeterProvider,
  metrics,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { namesOf, rejectUnknownOptions } from '../config/option-names.js';
import type {
  HoldInfo,
  LockTelemetry,
  OperationEnd,
  TracedOperation,
} from '../config/telemetry.js';
import type { NodeResult } from '../node-result.js';

/** Options of {@link openTelemetry}. */
export interface OpenTelemetryOptions {
  /** Where spans go. @default the global tracer provider (`trace.getTracerProvider()`) */
  tracerProvider?: TracerProvider;
  /** Where metrics go. @default the global meter provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /**
   * Maps a resource name to the value of the `distlock.resource` metric attribute, or
   * `undefined` to leave it out. Resource names are not metric attributes by default: their
   * number is unbounded. Return a small, fixed set of values (`invoice:42` → `invoice`).
   * Spans always carry the resource name.
   */
  resourceAttribute?: (resource: string) => string | undefined;
}

const OPEN_TELEMETRY_OPTIONS = namesOf<OpenTelemetryOptions>({
  tracerProvider: true,
  meterProvider: true,
  resourceAttribute: true,
});

const SCOPE = 'distlock';

/**
 * Reports distlock's spans and metrics through `@opentelemetry/api` (an optional peer
 * dependency: only this entry point imports it).
 *
 * Spans `lock.acquire`, `lock.extend`, `lock.release` (kind INTERNAL), the active span while
 * the operation runs, so the Redis client's own spans nest in them. Metrics:
 * - `distlock.acquire.duration` (histogram, s), by `distlock.hold.kind` and `distlock.outcome`;
 * - `distlock.hold.duration` (histogram, s), by kind and `distlock.hold.end` (released, lost);
 * - `distlock.holds` (up-down counter): holds now;
 * - `distlock.losses`, `distlock.extensions` (counters);
 * - `distlock.node.failures` (counter), by `server.address` (the node's name) and `error.type`.
 * Tokens never appear.
 *
 * @example
 * ```ts
 * import { openTelemetry } from 'distlock/opentelemetry';
 * const locker = new Locker({ nodes, telemetry: openTelemetry() });
 * ```
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): LockTelemetry {
  rejectUnknownOptions(options, OPEN_TELEMETRY_OPTIONS, 'openTelemetry');
  const tracer: Tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const meter: Meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const instruments = {
    acquireDuration: meter.createHistogram('distlock.acquire.duration', {
      description: 'How long acquisitions took, by outcome.',
      unit: 's',
    }),
    holdDuration: meter.createHistogram('distlock.hold.duration', {
      description: 'How long holds lasted, until released or lost.',
      unit: 's',
    }),
    holds: meter.createUpDownCounter('distlock.holds', {
      description: 'Holds (locks, permits, read and write locks) held now.',
      unit: '{hold}',
    }),
    losses: meter.createCounter('distlock.losses', {
      description: 'Holds lost: an extension failed, or the validity ran out unreleased.',
      unit: '{hold}',
    }),
    extensions: meter.createCounter('distlock.extensions', {
      description: 'Extensions, by outcome.',
      unit: '{extension}',
    }),
    nodeFailures: meter.createCounter('distlock.node.failures', {
      description: 'Node requests that failed or timed out, by node and kind of failure.',
      unit: '{request}',
    }),
  };
  // Metric attribute sets are few (kind × outcome × mapped resource): built once each, since
  // an SDK hashes a new object on every record.
  const attributeSets = new Map<string, Attributes>();
  const labels = (hold: HoldInfo, name?: string, value?: string): Attributes => {
    const resource = options.resourceAttribute?.(hold.resource);
    const id = `${hold.kind}\0${resource ?? ''}\0${name ?? ''}\0${value ?? ''}`;
    let attributes = attributeSets.get(id);
    if (!attributes) {
      attributes = {
        'distlock.hold.kind': hold.kind,
        ...(resource === undefined ? {} : { 'distlock.resource': resource }),
        ...(name === undefined ? {} : { [name]: value }),
      };
      attributeSets.set(id, attributes);
    }
    return attributes;
  };

  return {
    start(operation, hold): TracedOperation {
      const startedAt = performance.now();
      const span = tracer.startSpan(`lock.${operation}`, {
        kind: SpanKind.INTERNAL,
        attributes: { 'distlock.resource': hold.resource, 'distlock.hold.kind': hold.kind },
      });
      const active = trace.setSpan(context.active(), span);
      return {
        run: (work) => context.with(active, work),
        end(end: OperationEnd) {
          span.setAttributes(spanAttributes(end));
          if (end.error) {
            span.recordException(end.error);
            span.setStatus({ code: SpanStatusCode.ERROR, message: end.error.message });
          }
          span.end();
          countNodeFailures(instruments.nodeFailures, end.nodes);
          const outcome = labels(hold, 'distlock.outcome', end.outcome);
          if (operation === 'acquire') {
            instruments.acquireDuration.record((performance.now() - startedAt) / 1_000, outcome);
          } else if (operation === 'extend') {
            instruments.extensions.add(1, outcome);
          }
        },
      };
    },
    held(hold, change) {
      if ('began' in change) {
        instruments.holds.add(1, labels(hold));
        return;
      }
      instruments.holds.add(-1, labels(hold));
      const ended = labels(hold, 'distlock.hold.end', change.ended);
      instruments.holdDuration.record(change.heldMs / 1_000, ended);
      if (change.ended === 'lost') instruments.losses.add(1, labels(hold));
    },
  };
}

function spanAttributes({ outcome, attempts, nodes }: OperationEnd): Attributes {
  const attributes: Attributes = { 'distlock.outcome': outcome };
  if (attempts !== undefined) attributes['distlock.acquire.attempts'] = attempts;
  if (nodes === undefined) return attributes;
  // `pending`: nodes that had not answered when the verdict was reached.
  const votes = { yes: 0, no: 0, timeout: 0, error: 0, pending: 0 };
  for (const node of nodes) votes[node?.outcome ?? 'pending']++;
  for (const [vote, count] of Object.entries(votes)) attributes[`distlock.nodes.${vote}`] = count;
  return attributes;
}

function countNodeFailures(
  counter: { add(value: number, attributes: Attributes): void },
  nodes: readonly (NodeResult | undefined)[] | undefined,
): void {
  for (const node of nodes ?? []) {
    if (node?.outcome !== 'timeout' && node?.outcome !== 'error') continue;
    const errorType = node.outcome === 'timeout' ? 'timeout' : errorTypeOf(node.error);
    counter.add(1, { 'server.address': node.node, 'error.type': errorType });
  }
}

/** A Redis error's code (`NOPERM`, `WRONGPASS`...), else the error's class name. */
function errorTypeOf(error: Error): string {
  return /^[A-Z][A-Z_]+(?= )/.exec(error.message)?.[0] ?? error.name;
}
