import { describe, expect, it } from 'vitest';
import { deliveryStateOf, lastAnswerOf, type WebhookDelivery } from './delivery-state.ts';

const base: WebhookDelivery = {
  eventId: 'evt_1',
  type: 'payment_intent.succeeded',
  status: 'pending',
  attempts: 0,
  deliveries: 0,
  deliveredAt: null,
  nextAttemptAt: '2026-01-01T00:00:05.000Z',
  lastStatus: null,
  lastError: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  paymentIntentId: 'pi_1',
  paymentId: 'pay_1',
};

describe('deliveryStateOf', () => {
  it('tells queued, retrying (with its next time), delivered and failed apart', () => {
    expect(deliveryStateOf(base)).toEqual({ kind: 'queued' });
    expect(
      deliveryStateOf({ ...base, attempts: 2, lastStatus: 500, lastError: 'HTTP 500' }),
    ).toEqual({ kind: 'retrying', nextAt: '2026-01-01T00:00:05.000Z' });
    expect(deliveryStateOf({ ...base, attempts: 1, lastError: 'TimeoutError: slow' })).toEqual({
      kind: 'retrying',
      nextAt: '2026-01-01T00:00:05.000Z',
    });
    expect(
      deliveryStateOf({ ...base, status: 'delivered', deliveredAt: '2026-01-01T00:00:01.000Z' }),
    ).toEqual({ kind: 'delivered', at: '2026-01-01T00:00:01.000Z' });
    expect(
      deliveryStateOf({
        ...base,
        status: 'failed',
        attempts: 30,
        lastStatus: 500,
        nextAttemptAt: null,
      }),
    ).toEqual({ kind: 'failed' });
  });

  it('says the last answer: a status, no answer and why, or nothing sent', () => {
    expect(lastAnswerOf({ lastStatus: 503, lastError: 'HTTP 503' })).toBe('HTTP 503');
    expect(lastAnswerOf({ lastStatus: null, lastError: 'TypeError: fetch failed' })).toBe(
      'no answer (TypeError: fetch failed)',
    );
    expect(lastAnswerOf({ lastStatus: null, lastError: null })).toBe('not sent yet');
  });
});
