import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { IdempotencyEvent } from '../core/types.ts';
import { createPrometheusObserver } from './prometheus.ts';

describe('createPrometheusObserver', () => {
  it('counts events per type and operation and records durations on the given registry', async () => {
    const registry = new Registry();
    const { onEvent } = createPrometheusObserver({ registry });
    onEvent({ type: 'created', operation: 'checkout.pay' });
    onEvent({ type: 'replayed', operation: 'checkout.pay' });
    onEvent({ type: 'replayed', operation: 'checkout.pay' });
    onEvent({ type: 'completed', operation: 'checkout.pay', durationMs: 120 });
    onEvent({ type: 'store_error', operation: 'checkout.pay', durationMs: 2000 });
    onEvent({ type: 'waited', operation: 'checkout.pay', durationMs: 40 });
    onEvent({ type: 'reaped', count: 7 });
    const text = await registry.metrics();
    expect(text).toContain('idempotency_events_total{event="replayed",operation="checkout.pay"} 2');
    expect(text).toContain(
      'idempotency_handler_duration_seconds_count{operation="checkout.pay"} 1',
    );
    expect(text).toContain(
      'idempotency_store_error_duration_seconds_count{operation="checkout.pay"} 1',
    );
    expect(text).toContain('idempotency_maintenance_rows_total{job="reaped"} 7');
    expect(text).toContain('idempotency_wait_duration_seconds_count{operation="checkout.pay"} 1');
  });
});

describe('createPrometheusObserver as the reference shows it', () => {
  it('is itself an onEvent: passed whole to the engine and to startKeyMaintenance', async () => {
    const registry = new Registry();
    const observer = createPrometheusObserver({ registry });
    // What docs/reference.md says: the observer is an `onEvent`.
    const onEvent: (event: IdempotencyEvent) => void = observer;
    onEvent({ type: 'created', operation: 'orders.place' });
    expect(await registry.metrics()).toContain(
      'idempotency_events_total{event="created",operation="orders.place"} 1',
    );
  });
});
