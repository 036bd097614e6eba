import { Counter, Histogram, type Registry } from 'prom-client';
import type { IdempotencyEvent } from '../core/types.ts';
import { type IdempotencyObserver, observerOf } from './observer.ts';

/**
 * prom-client metrics for idempotency events, registered on the registry you pass:
 * - `<prefix>events_total{event,operation}`: every event (created, replayed, in_use, ...);
 * - `<prefix>handler_duration_seconds{operation}`: handler time of completed executions;
 * - `<prefix>store_error_duration_seconds{operation}`: how long failing store calls took;
 * - `<prefix>wait_duration_seconds{operation}`: how long duplicates waited (`waitForResult`);
 * - `<prefix>maintenance_rows_total{job}`: rows reaped / swept / resumed (completed by a completer).
 *
 * @example
 * const registry = new Registry();
 * const observer = createPrometheusObserver({ registry });
 * const idempotency = createIdempotency({ store, onEvent: observer });
 * startKeyMaintenance(db, { onEvent: observer });
 */
export function createPrometheusObserver(options: {
  registry: Registry;
  prefix?: string;
}): IdempotencyObserver {
  const prefix = options.prefix ?? 'idempotency_';
  const registers = [options.registry];
  const events = new Counter({
    name: `${prefix}events_total`,
    help: 'Idempotency events by type and operation',
    labelNames: ['event', 'operation'] as const,
    registers,
  });
  const handlerDuration = new Histogram({
    name: `${prefix}handler_duration_seconds`,
    help: 'Duration of handlers that completed under an idempotency key',
    labelNames: ['operation'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const storeErrorDuration = new Histogram({
    name: `${prefix}store_error_duration_seconds`,
    help: 'How long failing idempotency store calls took before failing (timeouts show up at the cap)',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.01, 0.1, 0.5, 1, 2, 5],
    registers,
  });
  const waitDuration = new Histogram({
    name: `${prefix}wait_duration_seconds`,
    help: 'How long concurrent duplicates waited for the first request (waitForResult)',
    labelNames: ['operation'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const maintenanceRows = new Counter({
    name: `${prefix}maintenance_rows_total`,
    help: 'Rows deleted by the reaper, settled by the lease sweeper or completed by a completer',
    labelNames: ['job'] as const,
    registers,
  });

  return observerOf((event: IdempotencyEvent) => {
    const operation = event.operation ?? '';
    events.inc({ event: event.type, operation });
    if (event.type === 'completed' && event.durationMs !== undefined) {
      handlerDuration.observe({ operation }, event.durationMs / 1000);
    } else if (event.type === 'store_error' && event.durationMs !== undefined) {
      storeErrorDuration.observe({ operation }, event.durationMs / 1000);
    } else if (event.type === 'waited' && event.durationMs !== undefined) {
      waitDuration.observe({ operation }, event.durationMs / 1000);
    } else if (event.type === 'reaped' || event.type === 'swept' || event.type === 'resumed') {
      maintenanceRows.inc({ job: event.type }, event.count ?? 0);
    }
  });
}
