// Runnable: `npm run build && node examples/telemetry.mjs`.
// distlock's spans and metrics, collected by the OpenTelemetry SDK (in memory here; your
// exporter in a service).

import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Locker } from 'distlock';
import { openTelemetry } from 'distlock/opentelemetry';
import { startRedis } from 'distlock/testing';

const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(spans)],
});
const reader = new PeriodicExportingMetricReader({
  exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
  exportIntervalMillis: 60_000,
});
const meterProvider = new MeterProvider({ readers: [reader] });

const redis = await startRedis({ nodes: 3 });
// Without tracerProvider and meterProvider, the global ones (your SDK setup) are used.
const telemetry = openTelemetry({ tracerProvider, meterProvider });
const locker = new Locker({ nodes: redis.urls, telemetry });

try {
  await locker.withLock('report', { ttlMs: 5_000 }, async () => {});
  await locker.tryAcquire('report', { ttlMs: 5_000 }).then((lock) => lock?.release());
  // A release resolves once a majority deleted the key; its span ends with the last node's
  // answer, which the close waits for.
  await locker.close();
  const [acquire] = spans.getFinishedSpans();
  console.log(
    'spans:',
    spans
      .getFinishedSpans()
      .map((span) => span.name)
      .sort() // in the order they ended: a release's span ends with its last node
      .join(', '),
  );
  console.log(
    'first acquire:',
    acquire.attributes['distlock.outcome'],
    acquire.attributes['distlock.resource'],
  );
  const { resourceMetrics } = await reader.collect();
  const names = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
  console.log(
    'metrics:',
    names
      .map((metric) => metric.descriptor.name)
      .sort()
      .join(', '),
  );
} finally {
  await locker.close();
  await redis.stop();
  await meterProvider.shutdown();
}
