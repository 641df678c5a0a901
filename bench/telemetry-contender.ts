/**
 * distlock reporting to a live OpenTelemetry SDK (spans batched to an exporter that drops
 * them, metrics aggregated in memory): the cost of telemetry, against plain distlock.
 */
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { Locker } from '../dist/esm/index.js';
import { openTelemetry } from '../dist/esm/telemetry/opentelemetry.js';
import type { ContenderSpec } from './contender-spec.js';

/** Takes every span and keeps none: the SDK's own work is measured, not an exporter's. */
const dropSpans: SpanExporter = {
  export: (_spans: ReadableSpan[], done) => done({ code: 0 }),
  shutdown: async () => {},
};

export const distlockWithTelemetry: ContenderSpec = {
  name: 'distlock + OpenTelemetry',
  multiNode: true,
  singleNode: true,
  uncontendedOnly: true,
  make(clients) {
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [new BatchSpanProcessor(dropSpans)],
    });
    const meterProvider = new MeterProvider();
    const locker = new Locker({
      nodes: clients,
      telemetry: openTelemetry({ tracerProvider, meterProvider }),
    });
    return {
      acquire: (key, ttlMs) => locker.acquire(key, { ttlMs, waitMs: 10_000 }),
      close: async () => {
        await locker.close();
        await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
      },
    };
  },
};
