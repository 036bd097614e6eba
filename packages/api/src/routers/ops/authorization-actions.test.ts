import { randomUUID } from 'node:crypto';
import { actionDownstreamKeyFor, paymentActionIdFor } from '@once/payments';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';
import { refusal } from '../../testing/refusal.ts';

// The operator's capture and void as the API writes them: the action and its job first, under
// the caller's Idempotency-Key; the worker's side is apps/worker/src/jobs/authorization/authorization-action.test.ts.
let h: ApiTestHarness;

beforeAll(async () => {
  h = await createApiTestHarness('api_authorization_actions');
}, 60_000);
afterAll(async () => {
  await h.drop();
});

const merchant = (key: string) => h.caller({ ...bearer('tenant_a'), 'idempotency-key': key });

/** A manual-capture checkout, moved to `authorized` as the worker would after the confirm. */
async function authorizedPayment(): Promise<{ paymentId: string; amount: number }> {
  const paid = await merchant(randomUUID()).api.checkout.pay({
    lines: [{ productId: 'book_sre', quantity: 1 }],
    capture: 'manual',
  });
  await h.database.client.sql`
    update payments set status = 'authorized', processor_payment_intent_id = 'pi_test'
    where id = ${paid.paymentId}`;
  return { paymentId: paid.paymentId, amount: paid.amount };
}

const written = async (paymentId: string) => {
  const sql = h.database.client.sql;
  const actions = await sql`
    select kind, status, amount, downstream_key from payment_actions where payment_id = ${paymentId}`;
  const jobs = await sql`
    select kind, downstream_key, payload from outbox_jobs
    where payment_id = ${paymentId} and kind <> 'charge_payment'`;
  return { actions, jobs };
};

describe('ops.capturePayment and ops.voidPayment', () => {
  it('checkout.pay with capture: manual records the payment for manual capture', async () => {
    const { paymentId } = await authorizedPayment();
    const [row] = await h.database.client.sql`
      select capture_method from payments where id = ${paymentId}`;
    expect(row?.capture_method).toBe('manual');
  });

  it('a capture writes its action and one job under keys derived from the operator’s key; the same key replays it', async () => {
    const { paymentId } = await authorizedPayment();
    const key = randomUUID();
    const first = merchant(key);
    const result = await first.api.ops.capturePayment({ paymentId, amount: 1000 });
    expect(result).toMatchObject({ paymentId, kind: 'capture', status: 'pending', amount: 1000 });
    // A double click: the same key answers the first result and writes nothing more.
    const again = merchant(key);
    expect(await again.api.ops.capturePayment({ paymentId, amount: 1000 })).toEqual(result);
    expect(again.resHeaders.get('idempotent-replayed')).toBe('true');
    expect(result.actionId).toBe(paymentActionIdFor('capture', 'tenant_a', key));
    const downstreamKey = actionDownstreamKeyFor('capture', 'tenant_a', key);
    expect(await written(paymentId)).toEqual({
      actions: [
        {
          kind: 'capture',
          status: 'pending',
          amount: 1000,
          downstream_key: downstreamKey,
        },
      ],
      jobs: [
        {
          kind: 'capture_payment',
          downstream_key: downstreamKey,
          payload: { actionId: result.actionId, amountToCapture: 1000 },
        },
      ],
    });
  });

  it('a second capture or a void under another key is refused while one is under way, with nothing written', async () => {
    const { paymentId } = await authorizedPayment();
    await merchant(randomUUID()).api.ops.capturePayment({ paymentId });
    const before = await written(paymentId);
    expect(await refusal(merchant(randomUUID()).api.ops.capturePayment({ paymentId }))).toEqual({
      trpc: 'CONFLICT',
      code: 'payment_not_authorized',
    });
    expect(await refusal(merchant(randomUUID()).api.ops.voidPayment({ paymentId }))).toEqual({
      trpc: 'CONFLICT',
      code: 'payment_not_authorized',
    });
    expect(await written(paymentId)).toEqual(before);
  });

  it('a capture over the authorised amount is refused with nothing written; the key may then be used', async () => {
    const { paymentId, amount } = await authorizedPayment();
    const key = randomUUID();
    expect(
      await refusal(merchant(key).api.ops.capturePayment({ paymentId, amount: amount + 1 })),
    ).toEqual({ trpc: 'BAD_REQUEST', code: 'capture_amount_too_large' });
    expect(await written(paymentId)).toEqual({ actions: [], jobs: [] });
    // A refusal releases the key: the corrected request runs.
    const fixed = await merchant(key).api.ops.capturePayment({ paymentId, amount });
    expect(fixed).toMatchObject({ status: 'pending', amount });
  });

  it('a payment that is not authorised cannot be captured or voided; an unknown one is not found', async () => {
    const paid = await merchant(randomUUID()).api.checkout.pay({
      lines: [{ productId: 'book_sre', quantity: 1 }],
    });
    // One call at a time: a call started before the previous one is awaited could reject with
    // no handler yet, which the runner counts as an unhandled rejection.
    for (const call of [
      () => merchant(randomUUID()).api.ops.capturePayment({ paymentId: paid.paymentId }),
      () => merchant(randomUUID()).api.ops.voidPayment({ paymentId: paid.paymentId }),
    ]) {
      expect(await refusal(call())).toEqual({ trpc: 'CONFLICT', code: 'payment_not_authorized' });
    }
    expect(
      await refusal(merchant(randomUUID()).api.ops.voidPayment({ paymentId: 'pay_nope' })),
    ).toEqual({ trpc: 'NOT_FOUND', code: 'payment_not_found' });
  });

  it('a void writes a void job under a key derived from the operator’s key', async () => {
    const { paymentId } = await authorizedPayment();
    const key = randomUUID();
    const result = await merchant(key).api.ops.voidPayment({ paymentId });
    expect(result).toMatchObject({ kind: 'void', status: 'pending', amount: null });
    expect((await written(paymentId)).jobs).toEqual([
      {
        kind: 'void_payment',
        downstream_key: actionDownstreamKeyFor('void', 'tenant_a', key),
        payload: { actionId: result.actionId },
      },
    ]);
  });
});
