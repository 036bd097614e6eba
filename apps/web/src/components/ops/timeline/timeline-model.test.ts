import { describe, expect, it } from 'vitest';
import { lanesOf, stepOf, type TimelineEventData } from './timeline-model.ts';

const at = '2026-01-01T00:00:00.000Z';
const event = (
  seq: number,
  actor: string,
  kind: string,
  detail: Record<string, unknown> = {},
): TimelineEventData => ({ seq, at, actor, kind, detail });

describe('timeline model', () => {
  it('orders lanes the way a payment travels, workers by first appearance', () => {
    const steps = [
      event(1, 'browser', 'pay.attempt', { to: 'web', key: 'k', replayed: false }),
      event(2, 'reconciler', 'reconciler.decided', { to: 'processor', decision: 'succeeded' }),
      event(3, 'worker:w2', 'job.claimed', { attempt: 1 }),
      event(4, 'worker:w1', 'job.claimed', { attempt: 2, takeover: true }),
      event(5, 'processor', 'webhook.applied', { to: 'webhook' }),
    ].map(stepOf);
    expect(lanesOf(steps)).toEqual([
      'browser',
      'web',
      'worker:w2',
      'worker:w1',
      'processor',
      'webhook',
      'reconciler',
    ]);
  });

  it('names processor call results: charged, replayed, 409 in flight, failed', () => {
    const call = (detail: Record<string, unknown>) =>
      stepOf(event(1, 'worker:w1', 'processor.call', { to: 'processor', ...detail }));
    expect(call({ call: 'confirm', result: 'ok', status: 'succeeded' })).toMatchObject({
      from: 'worker:w1',
      to: 'processor',
      label: 'confirm: charged',
      tone: 'ok',
    });
    expect(
      call({ call: 'create', result: 'replayed', status: 'requires_confirmation' }).label,
    ).toBe('create: replayed (requires_confirmation)');
    expect(call({ call: 'confirm', result: 'in_flight' }).label).toBe('confirm: 409 in flight');
    expect(call({ call: 'confirm', result: 'failed', error: 'http_500' })).toMatchObject({
      label: 'confirm: failed: http_500',
      tone: 'warn',
    });
  });

  it('shows a lease takeover and an unknown kind rather than hiding them', () => {
    expect(
      stepOf(
        event(1, 'worker:w2', 'job.claimed', { attempt: 2, takeover: true, previousWorker: 'w1' }),
      ),
    ).toMatchObject({
      from: 'worker:w2',
      to: 'worker:w2',
      tone: 'warn',
      label: 'took over (attempt 2)',
    });
    expect(stepOf(event(2, 'web', 'something.new', { a: 1 }))).toMatchObject({
      label: 'something.new',
      to: 'web',
    });
  });
});
