import { randomUUID } from 'node:crypto';
import { refundDownstreamKeyFor, refundIdFor } from '@once/payments';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

// The operator's refund as the API writes it: the refund and its job first, under the caller's
// Idempotency-Key; the worker's side is apps/worker/src/jobs/refund/refund-payment.test.ts.
let h: ApiTestHarness;

beforeAll(async () => {
  h = await createApiTestHarness('api_refund_payment');
}, 60_000);
afterAll(async () => {
  await h.drop();
});

const merchant = (key: string) => h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });

/** A checkout moved to `succeeded` (or `captured` for part of it) as the worker would. */
async function paidPayment(captured?: number): Promise<{ paymentId: string; amount: number }> {
  const paid = await merchant(randomUUID()).api.checkout.pay({
    lines: [{ productId: 'book_sre', quantity: 1 }],
  });
  await h.database.client.sql`
    update payments set status = ${captured ? 'captured' : 'succeeded'},
      amount_captured = ${captured ?? null}, processor_payment_intent_id = 'pi_test'
    where id = ${paid.paymentId}`;
  return { paymentId: paid.paymentId, amount: paid.amount };
}

const written = async (paymentId: string) => ({
  refunds: await h.database.client.sql`
    select amount, status, downstream_key from refunds where payment_id = ${paymentId} order by created_at`,
  jobs: await h.database.client.sql`
    select kind, downstream_key, payload from outbox_jobs
    where payment_id = ${paymentId} and kind = 'refund_payment' order by created_at`,
});

describe('ops.refundPayment', () => {
  it('writes the refund and one job under keys derived from the operator’s key; the same key replays it', async () => {
    const { paymentId } = await paidPayment();
    const key = randomUUID();
    const result = await merchant(key).api.ops.refundPayment({ paymentId, amount: 300 });
    expect(result).toMatchObject({ paymentId, amount: 300, status: 'requested' });
    const again = merchant(key);
    expect(await again.api.ops.refundPayment({ paymentId, amount: 300 })).toEqual(result);
    expect(again.resHeaders.get('idempotent-replayed')).toBe('true');
    expect(result.refundId).toBe(refundIdFor('tenant_a', key));
    const downstreamKey = refundDownstreamKeyFor('tenant_a', key);
    expect(await written(paymentId)).toEqual({
      refunds: [{ amount: 300, status: 'requested', downstream_key: downstreamKey }],
      jobs: [
        {
          kind: 'refund_payment',
          downstream_key: downstreamKey,
          payload: { refundId: result.refundId },
        },
      ],
    });
  });

  it('a key whose own row is gone (expired, lost in a failover) answers its refund as it is now; another request under it is refused', async () => {
    const { paymentId } = await paidPayment();
    const key = randomUUID();
    const result = await merchant(key).api.ops.refundPayment({ paymentId, amount: 300 });
    await h.database.client
      .sql`update refunds set status = 'succeeded' where id = ${result.refundId}`;
    const forgetKey = () => h.database.client.sql`delete from idempotency_keys where key = ${key}`;
    await forgetKey();
    expect(await merchant(key).api.ops.refundPayment({ paymentId, amount: 300 })).toEqual({
      ...result,
      status: 'succeeded',
    });
    await forgetKey();
    expect(await refusal(merchant(key).api.ops.refundPayment({ paymentId, amount: 200 }))).toEqual({
      trpc: 'UNPROCESSABLE_CONTENT',
      code: 'idempotency_key_reused',
    });
    expect((await written(paymentId)).refunds).toHaveLength(1);
  });

  it('several refunds up to what was received; one over what is left is refused with nothing written', async () => {
    const { paymentId, amount } = await paidPayment();
    await merchant(randomUUID()).api.ops.refundPayment({ paymentId, amount: amount - 100 });
    const before = await written(paymentId);
    const key = randomUUID();
    const over = await refusal(merchant(key).api.ops.refundPayment({ paymentId, amount: 101 }));
    expect(over).toEqual({ trpc: 'BAD_REQUEST', code: 'refund_amount_too_large' });
    expect(await written(paymentId)).toEqual(before);
    // The refusal released the key; the rest (no amount: all that is left) goes through.
    expect(await merchant(key).api.ops.refundPayment({ paymentId })).toMatchObject({
      amount: 100,
    });
    expect(
      await refusal(merchant(randomUUID()).api.ops.refundPayment({ paymentId, amount: 1 })),
    ).toEqual({ trpc: 'BAD_REQUEST', code: 'refund_amount_too_large' });
  });

  it('a failed refund no longer counts; a captured payment refunds only what was captured', async () => {
    const { paymentId } = await paidPayment(1000);
    const first = await merchant(randomUUID()).api.ops.refundPayment({ paymentId });
    expect(first.amount).toBe(1000);
    await h.database.client.sql`update refunds set status = 'failed' where id = ${first.refundId}`;
    expect(
      await merchant(randomUUID()).api.ops.refundPayment({ paymentId, amount: 1000 }),
    ).toMatchObject({ amount: 1000 });
  });

  it('a payment that received nothing cannot be refunded', async () => {
    const paid = await merchant(randomUUID()).api.checkout.pay({
      lines: [{ productId: 'book_sre', quantity: 1 }],
    });
    expect(
      await refusal(merchant(randomUUID()).api.ops.refundPayment({ paymentId: paid.paymentId })),
    ).toEqual({ trpc: 'CONFLICT', code: 'payment_not_refundable' });
    expect(await written(paid.paymentId)).toEqual({ refunds: [], jobs: [] });
  });
});
