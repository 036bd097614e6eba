import { type Attributes, context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../core/engine.ts';
import { createDrizzleStore } from '../store/drizzle/store.ts';
import {
  createIdempotencyTestDatabase,
  type IdempotencyTestDatabase,
} from '../testing/test-database.ts';
import { createOpenTelemetryObserver } from './opentelemetry.ts';

/** A reader the test collects from on demand (no export interval). */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

function setup(options: { recordTenantId?: boolean } = {}) {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const observer = createOpenTelemetryObserver({
    operations: ['checkout.pay'],
    tracer: tracerProvider.getTracer('test'),
    meter: meterProvider.getMeter('test'),
    ...options,
  });
  async function points(name: string): Promise<DataPoint<number | Histogram>[]> {
    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === name);
    return (metric?.dataPoints ?? []) as DataPoint<number | Histogram>[];
  }
  async function count(name: string, attributes: Attributes): Promise<number> {
    const point = (await points(name)).find(
      (p) => JSON.stringify(p.attributes) === JSON.stringify(attributes),
    );
    if (!point) return 0;
    return typeof point.value === 'number' ? point.value : point.value.count;
  }
  return { observer, spans, tracerProvider, points, count };
}

/** Every attribute value a test run produced, on spans, span events and metric points. */
async function everyAttributeValue(s: ReturnType<typeof setup>): Promise<string[]> {
  const values: unknown[] = [];
  for (const span of s.spans.getFinishedSpans()) {
    values.push(span.name, ...Object.values(span.attributes));
    for (const event of span.events) values.push(...Object.values(event.attributes ?? {}));
  }
  for (const name of [
    'idempotency.events',
    'idempotency.handler.duration',
    'idempotency.wait.duration',
  ]) {
    for (const point of await s.points(name)) values.push(...Object.values(point.attributes));
  }
  return values.map(String);
}

describe('createOpenTelemetryObserver', () => {
  it('counts events with bounded attributes: operations outside the configured set are `other`, no tenant unless asked', async () => {
    const s = setup();
    s.observer.onEvent({ type: 'created', tenantId: 'tenant_a', operation: 'checkout.pay' });
    s.observer.onEvent({ type: 'replayed', tenantId: 'tenant_a', operation: 'checkout.pay' });
    s.observer.onEvent({ type: 'replayed', tenantId: 'tenant_a', operation: 'checkout.pay' });
    s.observer.onEvent({ type: 'created', tenantId: 'tenant_a', operation: 'user-chosen-123' });
    s.observer.onEvent({ type: 'reaped', count: 7 });
    expect(
      await s.count('idempotency.events', {
        'idempotency.event': 'replayed',
        'idempotency.operation': 'checkout.pay',
      }),
    ).toBe(2);
    expect(
      await s.count('idempotency.events', {
        'idempotency.event': 'created',
        'idempotency.operation': 'other',
      }),
    ).toBe(1);
    expect(await s.count('idempotency.maintenance.rows', { 'idempotency.job': 'reaped' })).toBe(7);
    const values = await everyAttributeValue(s);
    expect(values).not.toContain('user-chosen-123');
    expect(values).not.toContain('tenant_a');
  });

  it('turns timed events into spans started durationMs earlier, children of the active span, which also gets a span event; a store error is an ERROR span without its message', async () => {
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    try {
      const s = setup({ recordTenantId: true });
      const server = s.tracerProvider.getTracer('http').startSpan('POST /pay');
      context.with(trace.setSpan(context.active(), server), () => {
        s.observer.onEvent({
          type: 'completed',
          tenantId: 'tenant_a',
          operation: 'checkout.pay',
          durationMs: 120,
        });
        s.observer.onEvent({
          type: 'store_error',
          tenantId: 'tenant_a',
          operation: 'checkout.pay',
          durationMs: 2_000,
          error: {
            label: 'reserve',
            error: Object.assign(new Error('duplicate key (k)=(secret-key)'), { code: '57014' }),
          },
        });
      });
      server.end();
      const finished = s.spans.getFinishedSpans();
      const handler = finished.find((x) => x.name === 'idempotency.handler');
      const failure = finished.find((x) => x.name === 'idempotency.store_error');
      const parent = finished.find((x) => x.name === 'POST /pay');
      expect(handler?.parentSpanContext?.spanId).toBe(parent?.spanContext().spanId);
      const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
      expect(ms(handler!.endTime) - ms(handler!.startTime)).toBeCloseTo(120, 0);
      expect(handler?.attributes).toEqual({
        'idempotency.event': 'completed',
        'idempotency.operation': 'checkout.pay',
        'idempotency.tenant_id': 'tenant_a',
      });
      expect(failure?.status.code).toBe(SpanStatusCode.ERROR);
      expect(failure?.attributes).toMatchObject({
        'error.type': '57014',
        'idempotency.store.call': 'reserve',
      });
      expect(JSON.stringify([failure?.attributes, failure?.events, failure?.status])).not.toContain(
        'secret-key',
      );
      expect(parent?.events.map((e) => e.name)).toEqual([
        'idempotency.completed',
        'idempotency.store_error',
      ]);
      expect(
        await s.count('idempotency.handler.duration', { 'idempotency.operation': 'checkout.pay' }),
      ).toBe(1);
      // Metrics never carry the tenant, even when spans may.
      for (const point of await s.points('idempotency.events'))
        expect(point.attributes).not.toHaveProperty('idempotency.tenant_id');
    } finally {
      context.disable();
    }
  });
});

describe('createOpenTelemetryObserver on the engine (real PostgreSQL)', () => {
  let t: IdempotencyTestDatabase;
  beforeAll(async () => {
    t = await createIdempotencyTestDatabase('opentelemetry');
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('reports a run, a waited duplicate and a replay, and never the key or the tenant', async () => {
    const s = setup();
    // Signals, not sleeps: the duplicate is started once the first is inside its handler, and
    // the gate opens once the duplicate has looked the key up (it polls only while waiting).
    let duplicateLookedUp = (): void => {};
    const duplicateWaiting = new Promise<void>((resolve) => {
      duplicateLookedUp = resolve;
    });
    let duplicateStarted = false;
    const store = createDrizzleStore(t.db);
    const idempotency = createIdempotency({
      store: {
        ...store,
        lookup: (id) => {
          if (duplicateStarted) duplicateLookedUp();
          return store.lookup(id);
        },
      },
      onEvent: s.observer.onEvent,
      operations: { 'checkout.pay': { waitForResult: { timeoutMs: 5_000 } } },
    });
    const key = `otel-secret-key-${Date.now()}`;
    const request = { tenantId: 'tenant_secret', operation: 'checkout.pay', key, fingerprint: 'f' };
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let entered!: () => void;
    const firstInHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = idempotency.execute(request, async () => {
      entered();
      await gate;
      return { status: 201, headers: {}, body: '{}' };
    });
    await firstInHandler;
    duplicateStarted = true;
    const duplicate = idempotency.execute(request, async () => ({
      status: 201,
      headers: {},
      body: '{"never":true}',
    }));
    await duplicateWaiting;
    open();
    expect((await first).kind).toBe('executed');
    expect((await duplicate).kind).toBe('replayed');
    expect(
      (await idempotency.execute(request, async () => ({ status: 500, headers: {}, body: null })))
        .kind,
    ).toBe('replayed');

    const op = { 'idempotency.operation': 'checkout.pay' };
    expect(await s.count('idempotency.events', { 'idempotency.event': 'created', ...op })).toBe(1);
    expect(await s.count('idempotency.events', { 'idempotency.event': 'completed', ...op })).toBe(
      1,
    );
    expect(await s.count('idempotency.events', { 'idempotency.event': 'waited', ...op })).toBe(1);
    expect(await s.count('idempotency.events', { 'idempotency.event': 'replayed', ...op })).toBe(2);
    expect(await s.count('idempotency.wait.duration', op)).toBe(1);
    expect(
      s.spans
        .getFinishedSpans()
        .map((x) => x.name)
        .sort(),
    ).toEqual(['idempotency.handler', 'idempotency.wait']);
    const values = await everyAttributeValue(s);
    expect(values.some((v) => v.includes('secret'))).toBe(false);
  });
});
