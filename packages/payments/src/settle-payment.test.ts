import { type PaymentStatus, paymentStatuses } from '@once/db/schema';
import { createTestDatabase, type TestDatabase } from '@once/db/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applyProcessorEvent, type ProcessorPaymentIntentEvent } from './apply-processor-event.ts';
import { FALLBACK_DECLINE_CODE } from './decline-code.ts';
import { canMovePayment } from './payment-states.ts';
import { type PaymentSettlement, settlePayment } from './settle-payment.ts';

/**
 * The guarded statements against a real database: the SQL `status in (...)` list must say
 * what the state machine says, for every pair of states.
 */
let database: TestDatabase;
const TENANT = 'tenant_settle';

beforeAll(async () => {
  database = await createTestDatabase('payments_settle');
  await database.client.sql`
    insert into tenants (id, name, api_key_sha256, processor_secret_key)
    values (${TENANT}, 'Settle', 'sha_settle', 'sk_test_settle'),
           ('tenant_other', 'Other', 'sha_other', 'sk_test_other')`;
});
afterAll(async () => {
  await database?.drop();
});
beforeEach(async () => {
  await database.client.sql`delete from outbox_jobs`;
  await database.client.sql`delete from payments`;
});

interface PaymentRow {
  status: string;
  processor_payment_intent_id: string | null;
  failure_code: string | null;
  failure_message: string | null;
}

async function insertPayment(
  id: string,
  status: PaymentStatus,
  fields: { intentId?: string; amount?: number } = {},
) {
  await database.client.sql`
    insert into payments (tenant_id, id, status, amount, currency, lines, idempotency_key,
                          downstream_key, processor_payment_intent_id)
    values (${TENANT}, ${id}, ${status}, ${fields.amount ?? 3999}, 'usd', '[]'::jsonb,
            ${`key_${id}`}, ${`once_pay_${id}`}, ${fields.intentId ?? null})`;
}

const rowOf = async (id: string) =>
  (
    await database.client.sql<PaymentRow[]>`
      select status, processor_payment_intent_id, failure_code, failure_message
      from payments where id = ${id}`
  )[0]!;

const settlementTo: Record<PaymentStatus, PaymentSettlement> = {
  processing: { status: 'processing' },
  succeeded: { status: 'succeeded', processorPaymentIntentId: 'pi_new' },
  declined: { status: 'declined', code: 'insufficient_funds', message: 'no funds' },
  unknown: { status: 'unknown', code: 'processor_timeout' },
  failed: { status: 'failed', code: 'never_sent' },
  authorized: { status: 'authorized', processorPaymentIntentId: 'pi_new' },
  captured: { status: 'captured', amountCaptured: 1500 },
  voided: { status: 'voided' },
  requires_action: {
    status: 'requires_action',
    processorPaymentIntentId: 'pi_new',
    nextActionUrl: 'https://processor.example/three_d_secure/pi_new?client_secret=s',
  },
  canceled: { status: 'canceled', processorPaymentIntentId: 'pi_new', code: 'abandoned' },
};

describe('settlePayment', () => {
  it('moves a payment exactly when the state machine allows it, for every pair of states', async () => {
    for (const from of paymentStatuses) {
      for (const to of paymentStatuses) {
        const id = `pay_${from}_${to}`;
        await insertPayment(id, from, { intentId: 'pi_recorded' });
        const before = await rowOf(id);
        const moved = await settlePayment(
          database.client.sql,
          { tenantId: TENANT, paymentId: id },
          settlementTo[to],
        );
        expect(moved, `${from} -> ${to}`).toBe(canMovePayment(from, to));
        const after = await rowOf(id);
        if (moved) expect(after.status, `${from} -> ${to}`).toBe(to);
        else expect(after, `${from} -> ${to}`).toEqual(before);
      }
    }
  });

  it('records what the processor said, keeps a recorded intent when the answer names none', async () => {
    await insertPayment('pay_declined', 'processing', { intentId: 'pi_recorded' });
    await settlePayment(
      database.client.sql,
      { tenantId: TENANT, paymentId: 'pay_declined' },
      settlementTo.declined,
    );
    expect(await rowOf('pay_declined')).toEqual({
      status: 'declined',
      processor_payment_intent_id: 'pi_recorded',
      failure_code: 'insufficient_funds',
      failure_message: 'no funds',
    });
  });

  it('keeps the challenge URL only while the payment waits for the shopper', async () => {
    const urlOf = async (id: string) =>
      (
        await database.client.sql<{ next_action_url: string | null }[]>`
          select next_action_url from payments where id = ${id}`
      )[0]!.next_action_url;
    await insertPayment('pay_3ds', 'processing');
    const payment = { tenantId: TENANT, paymentId: 'pay_3ds' };
    await settlePayment(database.client.sql, payment, settlementTo.requires_action);
    expect(await urlOf('pay_3ds')).toBe(
      'https://processor.example/three_d_secure/pi_new?client_secret=s',
    );
    await settlePayment(database.client.sql, payment, settlementTo.succeeded);
    expect(await rowOf('pay_3ds')).toMatchObject({ status: 'succeeded' });
    expect(await urlOf('pay_3ds')).toBeNull();
  });

  it('moves only the named tenant’s payment', async () => {
    await insertPayment('pay_tenant', 'processing');
    const moved = await settlePayment(
      database.client.sql,
      { tenantId: 'tenant_other', paymentId: 'pay_tenant' },
      settlementTo.failed,
    );
    expect(moved).toBe(false);
    expect((await rowOf('pay_tenant')).status).toBe('processing');
  });

  it('onlyIfNeverSent: refused once an intent is recorded or a job may still send one', async () => {
    const failNeverSent = (paymentId: string) =>
      settlePayment(database.client.sql, { tenantId: TENANT, paymentId }, settlementTo.failed, {
        onlyIfNeverSent: true,
      });
    await insertPayment('pay_intent', 'unknown', { intentId: 'pi_recorded' });
    expect(await failNeverSent('pay_intent')).toBe(false);

    for (const [status, movable] of [
      ['pending', false],
      ['running', false],
      ['done', true],
      ['dead', true],
    ] as const) {
      const id = `pay_job_${status}`;
      await insertPayment(id, 'unknown');
      await database.client.sql`
        insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key, status)
        values (${TENANT}, ${`job_${status}`}, 'charge_payment', ${id}, ${`once_pay_${id}`}, ${status})`;
      expect(await failNeverSent(id), `a ${status} job`).toBe(movable);
      expect((await rowOf(id)).status).toBe(movable ? 'failed' : 'unknown');
    }
  });
});

describe('applyProcessorEvent', () => {
  const event = (
    type: ProcessorPaymentIntentEvent['type'],
    paymentId: string | null,
    object: Partial<ProcessorPaymentIntentEvent['data']['object']> = {},
  ): ProcessorPaymentIntentEvent => ({
    id: `evt_${paymentId}`,
    type,
    data: {
      object: {
        id: 'pi_event',
        amount: 3999,
        currency: 'USD',
        metadata: paymentId ? { payment_id: paymentId } : null,
        ...object,
      },
    },
  });
  const apply = (e: ProcessorPaymentIntentEvent, tenantId = TENANT) =>
    database.client.db.transaction((tx) => applyProcessorEvent(tx, tenantId, e));

  it('a success settles the payment with the event’s intent', async () => {
    await insertPayment('pay_ok', 'processing');
    expect(await apply(event('payment_intent.succeeded', 'pay_ok'))).toEqual({
      kind: 'applied',
      paymentId: 'pay_ok',
      status: 'succeeded',
    });
    expect(await rowOf('pay_ok')).toMatchObject({
      status: 'succeeded',
      processor_payment_intent_id: 'pi_event',
    });
  });

  it('a failure records the decline code and message, or the fallback code', async () => {
    await insertPayment('pay_no', 'unknown');
    const failed = event('payment_intent.payment_failed', 'pay_no', {
      last_payment_error: { code: 'card_declined', decline_code: 'stolen_card', message: 'stop' },
    });
    expect(await apply(failed)).toMatchObject({ kind: 'applied', status: 'declined' });
    expect(await rowOf('pay_no')).toMatchObject({
      status: 'declined',
      failure_code: 'stolen_card',
      failure_message: 'stop',
    });
    await insertPayment('pay_bare', 'processing');
    await apply(event('payment_intent.payment_failed', 'pay_bare', { last_payment_error: null }));
    expect(await rowOf('pay_bare')).toMatchObject({
      failure_code: FALLBACK_DECLINE_CODE,
      failure_message: null,
    });
  });

  it('a failed 3-D Secure challenge makes a payment waiting for it failed, with the authentication error, not declined', async () => {
    await insertPayment('pay_challenged', 'requires_action', { intentId: 'pi_event' });
    const failed = event('payment_intent.payment_failed', 'pay_challenged', {
      last_payment_error: {
        code: 'payment_intent_authentication_failure',
        message: 'The provided PaymentMethod has failed authentication.',
      },
    });
    expect(await apply(failed)).toMatchObject({ kind: 'applied', status: 'failed' });
    expect(await rowOf('pay_challenged')).toMatchObject({
      status: 'failed',
      failure_code: 'payment_intent_authentication_failure',
      failure_message: 'The provided PaymentMethod has failed authentication.',
    });
    await insertPayment('pay_answered', 'requires_action', { intentId: 'pi_event' });
    expect(await apply(event('payment_intent.succeeded', 'pay_answered'))).toMatchObject({
      kind: 'applied',
      status: 'succeeded',
    });
  });

  it('changes nothing for an authorised payment: its capture is recorded by the job that ran it', async () => {
    await insertPayment('pay_held', 'authorized', { intentId: 'pi_event' });
    expect(await apply(event('payment_intent.succeeded', 'pay_held'))).toEqual({
      kind: 'awaiting_capture',
      paymentId: 'pay_held',
    });
    expect(await rowOf('pay_held')).toMatchObject({ status: 'authorized' });
  });

  it('changes nothing for a terminal payment, another amount or currency, or no payment', async () => {
    await insertPayment('pay_done', 'succeeded', { intentId: 'pi_first' });
    expect(await apply(event('payment_intent.payment_failed', 'pay_done'))).toEqual({
      kind: 'already_terminal',
      paymentId: 'pay_done',
      status: 'succeeded',
    });
    expect(await rowOf('pay_done')).toMatchObject({
      status: 'succeeded',
      processor_payment_intent_id: 'pi_first',
      failure_code: null,
    });

    await insertPayment('pay_amount', 'processing');
    for (const other of [{ amount: 3998 }, { currency: 'eur' }]) {
      expect(await apply(event('payment_intent.succeeded', 'pay_amount', other))).toEqual({
        kind: 'amount_mismatch',
        paymentId: 'pay_amount',
      });
    }
    expect((await rowOf('pay_amount')).status).toBe('processing');

    expect(await apply(event('payment_intent.succeeded', null))).toEqual({
      kind: 'payment_not_found',
      paymentId: null,
    });
    expect(await apply(event('payment_intent.succeeded', 'pay_missing'))).toEqual({
      kind: 'payment_not_found',
      paymentId: 'pay_missing',
    });
    // Another tenant's payment is not found from this tenant's account.
    expect(await apply(event('payment_intent.succeeded', 'pay_amount'), 'tenant_other')).toEqual({
      kind: 'payment_not_found',
      paymentId: 'pay_amount',
    });
  });
});
