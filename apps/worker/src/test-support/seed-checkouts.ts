import { createHash, randomUUID } from 'node:crypto';
import { schema } from '@once/db';
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
 * charge job (plus the NOTIFY), so worker tests start exactly where the API hands over.
 */
export async function seedCheckout(
  sql: postgres.Sql,
  options: {
    tenantId?: string;
    amount?: number;
    paymentMethod?: string;
    maxAttempts?: number;
  } = {},
): Promise<SeededCheckout> {
  const tenantId = options.tenantId ?? 'tenant_a';
  const paymentId = `pay_${randomUUID()}`;
  const jobId = `job_${randomUUID()}`;
  const downstreamKey = `charge:${paymentId}`;
  const idempotencyKey = randomUUID();
  await sql.begin(async (tx) => {
    await tx`
      insert into payments (tenant_id, id, status, amount, currency, lines, idempotency_key, downstream_key)
      values (${tenantId}, ${paymentId}, 'processing', ${options.amount ?? 1999}, 'usd',
              ${JSON.stringify([{ productId: 'p1', name: 'Thing', quantity: 1, unitAmount: options.amount ?? 1999 }])}::text::jsonb,
              ${idempotencyKey}, ${downstreamKey})`;
    await tx`
      insert into outbox_jobs (tenant_id, id, kind, payment_id, downstream_key, payload, max_attempts)
      values (${tenantId}, ${jobId}, 'charge_payment', ${paymentId}, ${downstreamKey},
              ${JSON.stringify({ paymentMethod: options.paymentMethod ?? 'pm_card_visa' })}::text::jsonb,
              ${options.maxAttempts ?? 8})`;
    await tx`select pg_notify(${schema.OUTBOX_NOTIFY_CHANNEL}, ${paymentId})`;
  });
  return { tenantId, paymentId, jobId, downstreamKey, idempotencyKey };
}
