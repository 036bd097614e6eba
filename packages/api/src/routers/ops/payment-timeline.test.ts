import { randomUUID } from 'node:crypto';
import { paymentEvents, payments } from '@once/db/schema';
import { downstreamKeyFor } from '@once/payments';
import { TRPCError } from '@trpc/server';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pay } from '../../checkout/pay.ts';
import type { Database } from '../../database.ts';
import type { LedgerCharge } from '../../processor/processor-admin.ts';
import {
  type ApiTestHarness,
  bearer,
  createApiTestHarness,
} from '../../testing/api-test-harness.ts';

const ledgerCharges: LedgerCharge[] = [];
let h: ApiTestHarness;

beforeAll(async () => {
  h = await createApiTestHarness('api_payment_timeline', {
    processorLedger: { chargesOf: async () => ledgerCharges },
  });
});
afterAll(async () => {
  await h.drop();
});

const lines = [{ productId: 'book_sre', quantity: 1 }];
const payWith = (key: string, headers: Record<string, string> = bearer('tenant_a')) =>
  h.caller({ ...headers, 'idempotency-key': key }).api.checkout.pay({ lines });

async function eventCount(paymentId?: string): Promise<number> {
  const db = h.database.client.db;
  const [row] = await db
    .select({ n: count() })
    .from(paymentEvents)
    .where(paymentId ? eq(paymentEvents.paymentId, paymentId) : undefined);
  return row?.n ?? 0;
}

describe('payment events are written with their facts', () => {
  it('a first attempt records the attempt and the commit; a retry records a replayed attempt', async () => {
    const key = randomUUID();
    const first = await payWith(key);
    await payWith(key);
    const timeline = await h
      .caller(bearer('tenant_a'))
      .api.ops.paymentTimeline({ paymentId: first.paymentId });
    expect(timeline.events.map((e) => [e.actor, e.kind, e.detail.replayed ?? null])).toEqual([
      ['browser', 'pay.attempt', false],
      ['web', 'payment.committed', null],
      ['browser', 'pay.attempt', true],
    ]);
    // The retry was answered by the idempotency guard from the key's stored response.
    expect(timeline.events[2]?.detail).toMatchObject({ key, source: 'stored_response' });
    expect(timeline.events[1]?.detail).toMatchObject({
      downstreamKey: downstreamKeyFor('tenant_a', key),
      keyState: 'completed',
    });
    expect(timeline.ledger).toMatchObject({ processor: 'reachable', verdict: 'not_charged' });
  });

  it('a pay transaction that rolls back leaves no event (and no payment)', async () => {
    const before = await eventCount();
    const real = h.database.client.db;
    // Everything `pay` writes runs, then the transaction fails before its commit.
    const failingAtCommit = new Proxy(real, {
      get(target, name, receiver) {
        if (name !== 'transaction') return Reflect.get(target, name, receiver);
        return (work: Parameters<Database['transaction']>[0]) =>
          target.transaction(async (tx) => {
            await work(tx);
            throw new Error('connection lost before commit');
          });
      },
    });
    const key = randomUUID();
    await expect(
      pay({
        ctx: {
          db: failingAtCommit,
          tenantId: 'tenant_a',
          idempotency: { key, complete: async () => {} },
        },
        input: { lines },
      }),
    ).rejects.toThrow('connection lost before commit');
    const left = await real.select().from(payments).where(eq(payments.idempotencyKey, key));
    expect(left).toEqual([]);
    expect(await eventCount()).toBe(before);
  });
});

describe('ops.paymentTimeline', () => {
  it('refuses a shopper session with FORBIDDEN before reading anything', async () => {
    const start = h.caller();
    await start.api.session.start({ demoTenantId: 'tenant_a', role: 'shopper' });
    const cookie = start.resHeaders.get('set-cookie')!.split(';')[0]!;
    const mine = await payWith(randomUUID(), { cookie });
    const refused = await h
      .caller({ cookie })
      .api.ops.paymentTimeline({ paymentId: mine.paymentId })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(TRPCError);
    expect((refused as TRPCError).code).toBe('FORBIDDEN');
    expect(((refused as TRPCError).cause as { code?: string }).code).toBe('operator_required');
  });

  it("answers another tenant's payment id as not found", async () => {
    const ofA = await payWith(randomUUID());
    const error = await h
      .caller(bearer('tenant_b'))
      .api.ops.paymentTimeline({ paymentId: ofA.paymentId })
      .catch((e: unknown) => e);
    expect((error as TRPCError).code).toBe('NOT_FOUND');
  });

  it('gives the ledger verdict on the payment: one charge under its key agrees once settled', async () => {
    const paid = await payWith(randomUUID());
    await h.database.client.sql`
      update payments set status = 'succeeded', processor_payment_intent_id = 'pi_t'
      where id = ${paid.paymentId}`;
    ledgerCharges.push({
      seq: 1,
      paymentIntentId: 'pi_t',
      chargeId: 'ch_t',
      amount: paid.amount,
      currency: 'usd',
      idempotencyKey: `once_pay_${paid.paymentId}`,
      metadata: { payment_id: paid.paymentId, tenant_id: 'tenant_a' },
      createdAt: new Date().toISOString(),
    });
    const timeline = await h
      .caller(bearer('tenant_a'))
      .api.ops.paymentTimeline({ paymentId: paid.paymentId });
    expect(timeline.ledger).toMatchObject({ verdict: 'agrees', side: { chargeCount: 1 } });
  });
});

describe('ops.stuckPayments', () => {
  it('counts unsettled payments the reconciler left undecided at least afterChecks times', async () => {
    const stuck = await payWith(randomUUID());
    await h.database.client.sql`
      update payments set status = 'unknown', reconcile_checks = 5 where id = ${stuck.paymentId}`;
    const api = h.caller(bearer('tenant_a')).api;
    expect(await api.ops.stuckPayments()).toEqual({ stuck: 1, afterChecks: 5 });
    expect(await api.ops.stuckPayments({ afterChecks: 6 })).toEqual({ stuck: 0, afterChecks: 6 });
    expect(await h.caller(bearer('tenant_b')).api.ops.stuckPayments()).toMatchObject({ stuck: 0 });
  });
});
