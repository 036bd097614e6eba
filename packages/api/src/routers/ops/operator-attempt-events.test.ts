import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';

// The story of an operator's key: every money request it answered, on the payment's timeline.
let h: ApiTestHarness;

beforeAll(async () => {
  h = await createApiTestHarness('api_operator_attempt_events');
}, 60_000);
afterAll(async () => {
  await h.drop();
});

const merchant = (key: string) => h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });

async function paidPayment(): Promise<string> {
  const paid = await merchant(randomUUID()).api.checkout.pay({
    lines: [{ productId: 'book_sre', quantity: 1 }],
  });
  await h.database.client.sql`
    update payments set status = 'succeeded', processor_payment_intent_id = 'pi_test'
    where id = ${paid.paymentId}`;
  return paid.paymentId;
}

const story = async (paymentId: string, key: string) =>
  (
    await h.database.client.sql`
      select actor, detail from payment_events
      where payment_id = ${paymentId} and kind = 'operator.attempt' and detail->>'key' = ${key}
      order by seq`
  ).map((row) => ({
    actor: row.actor,
    answer: row.detail.answer,
    operation: row.detail.operation,
  }));

describe('operator.attempt: the story of an operator key', () => {
  it('records the first execution, a replay and a 422 reuse, each under the key', async () => {
    const paymentId = await paidPayment();
    const key = randomUUID();
    await merchant(key).api.ops.refundPayment({ paymentId, amount: 100 });
    await merchant(key).api.ops.refundPayment({ paymentId, amount: 100 });
    await expect(merchant(key).api.ops.refundPayment({ paymentId, amount: 200 })).rejects.toThrow();
    const operation = 'ops.refundPayment';
    expect(await story(paymentId, key)).toEqual([
      { actor: 'operator', answer: 'executed', operation },
      { actor: 'operator', answer: 'replayed', operation },
      { actor: 'operator', answer: 'idempotency_key_reused', operation },
    ]);
  });

  it('records a refusal of the action by its code', async () => {
    const paymentId = await paidPayment();
    const key = randomUUID();
    await expect(
      merchant(key).api.ops.refundPayment({ paymentId, amount: 1_000_000 }),
    ).rejects.toThrow();
    const [entry] = await story(paymentId, key);
    expect(entry?.answer).toBe('refund_amount_too_large');
  });
});
