import { createHash, randomUUID } from 'node:crypto';
import { enqueueOutboxJob, moneyMoveJob } from '@once/db/outbox';
import type postgres from 'postgres';

export interface SeededCheckout {
  tenantId: string;
  paymentId: string;
  jobId: string;
  downstreamKey: string;
  idempotencyKey: string;
}

/** The two merchants the mock processor seeds (docs/process-contract.md). */
const TEST_TENANTS = [
  { id: 'tenant_a', secretKey: 'sk_test_tenant_a', accountId: 'acct_tenant_a' },
  { id: 'tenant_b', secretKey: 'sk_test_tenant_b', accountId: 'acct_tenant_b' },
] as const;

export async function seedTenants(sql: postgres.Sql): Promise<void> {
  for (const tenant of TEST_TENANTS) {
    await sql`
      insert into tenants (id, name, api_key_sha256, processor_secret_key, processor_account_id)
      values (${tenant.id}, ${tenant.id}, ${createHash('sha256').update(tenant.id).digest('hex')},
              ${tenant.secretKey}, ${tenant.accountId})
      on conflict (id) do nothing`;
  }
}

/**
 * What `checkout.pay` writes in its one transaction: a `processing` payment and its
 * charge job, enqueued (and NOTIFYed) as `pay` enqueues it, so worker tests start exactly
 * where the API hands over.
 */
export async function seedCheckout(
  sql: postgres.Sql,
  options: {
    tenantId?: string;
    amount?: number;
    paymentMethod?: string;
    maxAttempts?: number;
    /** `manual`: the charge only authorises (`checkout.pay` with `capture: 'manual'`). */
    captureMethod?: 'automatic' | 'manual';
  } = {},
): Promise<SeededCheckout> {
  const tenantId = options.tenantId ?? 'tenant_a';
  const paymentId = `pay_${randomUUID()}`;
  const jobId = `job_${randomUUID()}`;
  const downstreamKey = `charge:${paymentId}`;
  const idempotencyKey = randomUUID();
  const amount = options.amount ?? 1999;
  await sql.begin(async (tx) => {
    await tx`
      insert into payments (tenant_id, id, status, amount, currency, lines, idempotency_key,
                            downstream_key, capture_method)
      values (${tenantId}, ${paymentId}, 'processing', ${amount}, 'usd',
              ${JSON.stringify([{ productId: 'p1', name: 'Thing', quantity: 1, unitAmount: amount }])}::text::jsonb,
              ${idempotencyKey}, ${downstreamKey}, ${options.captureMethod ?? 'automatic'})`;
    await enqueueOutboxJob(tx, {
      tenantId,
      id: jobId,
      kind: 'charge_payment',
      paymentId,
      downstreamKey,
      payload: { amount, currency: 'usd', paymentMethod: options.paymentMethod ?? 'pm_card_visa' },
      maxAttempts: options.maxAttempts,
    });
  });
  return { tenantId, paymentId, jobId, downstreamKey, idempotencyKey };
}

/**
 * What `ops.capturePayment` / `ops.voidPayment` write in their one transaction: a `pending`
 * action and its job, with the action's own downstream key.
 */
export async function seedAuthorizationAction(
  sql: postgres.Sql,
  payment: { tenantId: string; paymentId: string },
  kind: 'capture' | 'void',
  options: { amount?: number; maxAttempts?: number } = {},
): Promise<{ actionId: string; jobId: string; downstreamKey: string }> {
  const actionId = `act_${randomUUID().replaceAll('-', '')}`;
  const jobId = `job_${randomUUID()}`;
  const downstreamKey = `once_${kind}_${actionId}`;
  await sql.begin(async (tx) => {
    await tx`
      insert into payment_actions (tenant_id, id, payment_id, kind, amount, downstream_key, requested_by)
      values (${payment.tenantId}, ${actionId}, ${payment.paymentId}, ${kind},
              ${options.amount ?? null}, ${downstreamKey}, 'api_key:test')`;
    const job = {
      tenantId: payment.tenantId,
      paymentId: payment.paymentId,
      id: jobId,
      downstreamKey,
    };
    await enqueueOutboxJob(tx, {
      ...moneyMoveJob(job, kind, actionId, options.amount ?? null),
      maxAttempts: options.maxAttempts,
    });
  });
  return { actionId, jobId, downstreamKey };
}

/**
 * What `ops.refundPayment` writes in its one transaction: a `requested` refund and its job,
 * with the refund's own downstream key.
 */
export async function seedRefund(
  sql: postgres.Sql,
  payment: { tenantId: string; paymentId: string },
  amount: number,
  options: { maxAttempts?: number } = {},
): Promise<{ refundId: string; jobId: string; downstreamKey: string }> {
  const refundId = `rf_${randomUUID().replaceAll('-', '')}`;
  const jobId = `job_${randomUUID()}`;
  const downstreamKey = `once_refund_${refundId}`;
  await sql.begin(async (tx) => {
    await tx`
      insert into refunds (tenant_id, id, payment_id, amount, downstream_key, requested_by)
      values (${payment.tenantId}, ${refundId}, ${payment.paymentId}, ${amount},
              ${downstreamKey}, 'api_key:test')`;
    const job = {
      tenantId: payment.tenantId,
      paymentId: payment.paymentId,
      id: jobId,
      downstreamKey,
    };
    await enqueueOutboxJob(tx, {
      ...moneyMoveJob(job, 'refund', refundId, amount),
      maxAttempts: options.maxAttempts,
    });
  });
  return { refundId, jobId, downstreamKey };
}
