import {
  type Attributes,
  type Meter,
  metrics,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { IdempotencyEvent, IdempotencyEventType } from '../core/types.ts';
import { type IdempotencyObserver, observerOf } from './observer.ts';

/** The instrumentation scope name: what your backend shows as the library. */
const OPENTELEMETRY_SCOPE = '@once/idempotency';

/** The value of `idempotency.operation` for an operation outside the configured set. */
const OTHER_OPERATION = 'other';

/** Options of `createOpenTelemetryObserver`. */
export interface OpenTelemetryObserverOptions {
  /**
   * The operations whose names may appear as `idempotency.operation`; any other is reported as
   * `other`, so a misbehaving caller cannot blow up your metrics' cardinality.
   */
  operations: readonly string[];
  /** Default: `trace.getTracer('@once/idempotency')` of the globally registered provider. */
  tracer?: Tracer;
  /** Default: `metrics.getMeter('@once/idempotency')` of the globally registered provider. */
  meter?: Meter;
  /**
   * Put `idempotency.tenant_id` on spans and span events (never on metrics: unbounded).
   * Default false: tenant ids may identify your customers.
   */
  recordTenantId?: boolean;
}

/** Events that report how long something took, as the span each becomes. */
const TIMED_SPANS: Partial<Record<IdempotencyEventType, string>> = {
  completed: 'idempotency.handler',
  waited: 'idempotency.wait',
  store_error: 'idempotency.store_error',
};

/**
 * OpenTelemetry for idempotency events, through `@opentelemetry/api` only (bring your SDK),
 * fed by the same `onEvent` hook as the Prometheus binding:
 * - metrics: `idempotency.events` (counter; `idempotency.event`, `idempotency.operation`),
 *   `idempotency.handler.duration`, `idempotency.wait.duration`,
 *   `idempotency.store_error.duration` (histograms, seconds; `idempotency.operation`),
 *   `idempotency.maintenance.rows` (counter; `idempotency.job`: reaped, swept, resumed);
 * - spans: `idempotency.handler` (a completed handler), `idempotency.wait` (a duplicate
 *   waiting for the first request's result) and `idempotency.store_error` (status ERROR,
 *   `error.type` and `idempotency.store.call`), each started `durationMs` before the event, as
 *   a child of the span active when the event fires (your HTTP server span);
 * - every event also as a span event `idempotency.<type>` on that active span.
 *
 * Attributes are bounded: the event type, the operation from `operations` (else `other`), the
 * store call's label; never the key, the fingerprint, an error message or an operator's
 * reason, and the tenant id only with `recordTenantId` (spans only).
 *
 * @example
 * const observer = createOpenTelemetryObserver({ operations: ['checkout.pay'] });
 * const idempotency = createIdempotency({ store, onEvent: observer });
 * startKeyMaintenance(db, { onEvent: observer });
 */
export function createOpenTelemetryObserver(
  options: OpenTelemetryObserverOptions,
): IdempotencyObserver {
  const tracer = options.tracer ?? trace.getTracer(OPENTELEMETRY_SCOPE);
  const meter = options.meter ?? metrics.getMeter(OPENTELEMETRY_SCOPE);
  const known = new Set(options.operations);

  const events = meter.createCounter('idempotency.events', {
    description: 'Idempotency events by type and operation',
  });
  const durations = {
    completed: meter.createHistogram('idempotency.handler.duration', {
      description: 'Duration of handlers that completed under an idempotency key',
      unit: 's',
    }),
    waited: meter.createHistogram('idempotency.wait.duration', {
      description: 'How long concurrent duplicates waited for the first request (waitForResult)',
      unit: 's',
    }),
    store_error: meter.createHistogram('idempotency.store_error.duration', {
      description: 'How long failing idempotency store calls took before failing',
      unit: 's',
    }),
  } as const;
  const maintenanceRows = meter.createCounter('idempotency.maintenance.rows', {
    description: 'Rows deleted by the reaper or settled by the lease sweeper',
  });

  function operationOf(event: IdempotencyEvent): string | undefined {
    if (event.operation === undefined) return undefined;
    return known.has(event.operation) ? event.operation : OTHER_OPERATION;
  }

  return observerOf((event: IdempotencyEvent) => {
    const operation = operationOf(event);
    const metricAttributes: Attributes = { 'idempotency.event': event.type };
    if (operation !== undefined) metricAttributes['idempotency.operation'] = operation;
    events.add(1, metricAttributes);
    if (event.type === 'reaped' || event.type === 'swept' || event.type === 'resumed') {
      maintenanceRows.add(event.count ?? 0, { 'idempotency.job': event.type });
    }

    const spanAttributes: Attributes = { ...metricAttributes };
    if (options.recordTenantId && event.tenantId !== undefined)
      spanAttributes['idempotency.tenant_id'] = event.tenantId;
    if (event.count !== undefined) spanAttributes['idempotency.count'] = event.count;
    trace.getActiveSpan()?.addEvent(`idempotency.${event.type}`, spanAttributes);

    const spanName = TIMED_SPANS[event.type];
    if (spanName === undefined || event.durationMs === undefined) return;
    const histogram = durations[event.type as keyof typeof durations];
    histogram.record(
      event.durationMs / 1000,
      operation ? { 'idempotency.operation': operation } : {},
    );
    const endTime = performance.timeOrigin + performance.now();
    const span = tracer.startSpan(spanName, {
      startTime: endTime - event.durationMs,
      attributes: spanAttributes,
    });
    if (event.type === 'store_error') {
      const failure = describeStoreError(event.error);
      span.setAttributes(failure);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end(endTime);
  });
}

/**
 * The bounded facts of a store failure: which store call (`reserve`, `lookup`, ...) and the
 * error's type (class name, or the SQLSTATE when the driver gives one). Never its message:
 * driver messages may quote the key.
 */
function describeStoreError(error: unknown): Attributes {
  const { label, error: cause } = (error ?? {}) as { label?: unknown; error?: unknown };
  const code = (cause as { code?: unknown } | undefined)?.code;
  const type =
    typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
      ? code
      : cause instanceof Error
        ? cause.name
        : 'unknown';
  const attributes: Attributes = { 'error.type': type };
  if (typeof label === 'string') attributes['idempotency.store.call'] = label;
  return attributes;
}
