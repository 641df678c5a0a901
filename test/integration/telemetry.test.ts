import { setTimeout as delay } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type HistogramMetricData,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RELEASE_NODE_TIMEOUT_MS } from '../../src/engine/every-node.js';
import { InvalidArgumentError, IORedisConnection, type RedisConnection } from '../../src/index.js';
import { openTelemetry } from '../../src/telemetry/opentelemetry.js';
import { useLockers, useRedis } from '../support/redis.js';

const fixture = useRedis(3);
const locker = useLockers(fixture);
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(spans)],
});
/** A fresh meter provider and reader for each test: metrics are cumulative. */
let reader: PeriodicExportingMetricReader;
let meterProvider: MeterProvider;
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  context.disable();
});
beforeEach(() => {
  spans.reset();
  reader = new PeriodicExportingMetricReader({
    exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
    exportIntervalMillis: 3_600_000,
  });
  meterProvider = new MeterProvider({ readers: [reader] });
});

/** A locker that reports to the in-memory exporters. */
function tracedLocker(
  options: Parameters<typeof openTelemetry>[0] = {},
  nodes?: RedisConnection[],
) {
  const telemetry = openTelemetry({ tracerProvider, meterProvider, ...options });
  return locker({ telemetry, ...(nodes ? { nodes } : {}) });
}

const finished = (name: string): ReadableSpan[] =>
  spans.getFinishedSpans().filter((span) => span.name === name);

async function metric(name: string): Promise<MetricData | undefined> {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === name);
}

describe('OpenTelemetry spans', () => {
  it('traces acquire, extend and release, with outcome, attempts and votes, and never a token', async () => {
    const l = tracedLocker();
    const lock = await l.acquire('invoice:42', { ttlMs: 10_000 });
    const token = (await (fixture().admin[0] as Redis).get('distlock:{invoice:42}')) as string;
    expect(token).toMatch(/\S/);
    await lock.extend(10_000);
    expect(await lock.release()).toBe('released');
    expect(await l.tryAcquire('invoice:42', { ttlMs: 10_000 })).not.toBeNull();
    expect(await locker().tryAcquire('invoice:42', { ttlMs: 10_000 })).toBeNull(); // untraced

    const [acquire, busy] = [
      finished('lock.acquire')[0],
      await tracedLocker().tryAcquire('invoice:42', { ttlMs: 1_000 }),
    ];
    expect(busy).toBeNull();
    expect(acquire?.attributes).toMatchObject({
      'distlock.resource': 'invoice:42',
      'distlock.hold.kind': 'lock',
      'distlock.outcome': 'acquired',
      'distlock.acquire.attempts': 1,
      'distlock.nodes.no': 0,
    });
    // Votes as of the verdict: a majority said yes, the third may not have answered yet.
    const { 'distlock.nodes.yes': yes, 'distlock.nodes.pending': pending } =
      acquire?.attributes ?? {};
    expect(Number(yes) + Number(pending)).toBe(3);
    expect(Number(yes)).toBeGreaterThanOrEqual(2);
    expect(finished('lock.extend')[0]?.attributes).toMatchObject({
      'distlock.outcome': 'extended',
    });
    expect(finished('lock.release')[0]?.attributes).toMatchObject({
      'distlock.outcome': 'released',
    });
    const refused = finished('lock.acquire').at(-1);
    expect(refused?.attributes).toMatchObject({
      'distlock.outcome': 'busy',
      'distlock.nodes.no': 3,
    });
    expect(refused?.status.code).toBe(2); // ERROR
    expect(
      JSON.stringify(spans.getFinishedSpans().map((s) => [s.attributes, s.events])),
    ).not.toContain(token);
  });

  it("is the parent of the Redis client's own spans", async () => {
    // A client instrumentation starts a span per command, under whatever span is active.
    const clientTracer = tracerProvider.getTracer('redis-client');
    const nodes = fixture().redis.urls.map((url) => {
      const inner = new IORedisConnection(new Redis(url));
      return {
        name: inner.name,
        close: () => inner.close(),
        send: (command: string, args: readonly (string | number)[], timeoutMs: number) => {
          clientTracer.startSpan(`redis ${command}`).end();
          return inner.send(command, args, timeoutMs);
        },
      } satisfies RedisConnection;
    });
    const lock = await tracedLocker({}, nodes).acquire('report', { ttlMs: 10_000 });
    await lock.release();
    const acquire = finished('lock.acquire')[0];
    expect(acquire).toBeDefined();
    const sets = spans.getFinishedSpans().filter((s) => s.name === 'redis SET');
    expect(sets).toHaveLength(3);
    for (const set of sets)
      expect(set.parentSpanContext?.spanId).toBe(acquire?.spanContext().spanId);
    for (const node of nodes) await node.close();
  });
});

describe('OpenTelemetry metrics', () => {
  it('records acquisitions by outcome, holds now, hold durations, extensions and losses', async () => {
    const l = tracedLocker();
    const lock = await l.acquire('m1', { ttlMs: 10_000 });
    await l.tryAcquire('m1', { ttlMs: 1_000 });
    const holdsDuring = await metric('distlock.holds');
    await lock.extend(10_000);
    await lock.release();
    await l.acquire('m2', { ttlMs: 200 }); // never released: runs out, lost
    await delay(300);

    const acquired = (await metric('distlock.acquire.duration')) as HistogramMetricData;
    const byOutcome = Object.fromEntries(
      acquired.dataPoints.map((p) => [p.attributes['distlock.outcome'], p.value.count]),
    );
    expect(byOutcome).toMatchObject({ acquired: 2, busy: 1 });
    expect(acquired.descriptor.unit).toBe('s');
    expect(holdsDuring?.dataPoints[0]?.value).toBe(1);
    expect((await metric('distlock.holds'))?.dataPoints[0]?.value).toBe(0);
    const held = (await metric('distlock.hold.duration')) as HistogramMetricData;
    const ends = Object.fromEntries(
      held.dataPoints.map((p) => [p.attributes['distlock.hold.end'], p.value.count]),
    );
    expect(ends).toMatchObject({ released: 1, lost: 1 });
    expect((await metric('distlock.losses'))?.dataPoints[0]?.value).toBe(1);
    expect((await metric('distlock.extensions'))?.dataPoints[0]?.attributes).toMatchObject({
      'distlock.outcome': 'extended',
    });
    // No resource names as metric attributes unless mapped.
    expect(JSON.stringify(acquired.dataPoints.map((p) => p.attributes))).not.toContain('m1');
  });

  it('counts node failures by node and kind, and maps resources only as told', async () => {
    const { nodes, urls } = fixture().redis;
    const l = tracedLocker({ resourceAttribute: (resource) => resource.split(':')[0] });
    await (await l.acquire('order:1', { ttlMs: 5_000 })).release(); // connections open
    nodes[0]?.pause();
    const lock = await l.acquire('order:2', { ttlMs: 5_000 });
    // The release resolves at its majority; its span ends, counting node 0's timeout, once
    // node 0 timed out (within a release's per-node timeout, RELEASE_NODE_TIMEOUT_MS).
    expect(await lock.release()).toBe('released');
    const timedOut = { 'server.address': new URL(urls[0] as string).host, 'error.type': 'timeout' };
    const counted = async () => {
      const failures = await metric('distlock.node.failures');
      return failures?.dataPoints.some((p) => isDeepStrictEqual(p.attributes, timedOut)) ?? false;
    };
    const deadline = performance.now() + 3 * RELEASE_NODE_TIMEOUT_MS;
    while (!(await counted()) && performance.now() < deadline) await delay(50);
    nodes[0]?.resume();
    expect(await counted()).toBe(true);
    const acquired = (await metric('distlock.acquire.duration')) as HistogramMetricData;
    expect(acquired.dataPoints.map((p) => p.attributes['distlock.resource'])).toContain('order');
  });

  it('rejects a telemetry that is not one, naming the field', () => {
    expect(() => locker({ telemetry: {} as never })).toThrow(InvalidArgumentError);
    expect(() => locker({ telemetry: {} as never })).toThrow(
      expect.objectContaining({ field: 'telemetry' }),
    );
  });
});
