import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';

/** The two merchants of the tests, as the mock processor seeds them. */
const TENANTS = ['tenant_a', 'tenant_b'] as const;

export async function seedTenants(sql: postgres.Sql): Promise<void> {
  for (const id of TENANTS) {
    await sql`
      insert into tenants (id, name, api_key_sha256, processor_secret_key, processor_account_id)
      values (${id}, ${id}, ${`hash_${id}`}, ${`sk_test_${id}`}, ${`acct_${id}`})
      on conflict (id) do nothing`;
  }
}

export interface SeededPayment {
  tenantId: string;
  paymentId: string;
  downstreamKey: string;
  idempotencyKey: string;
}

/**
 * A `processing` payment as checkout leaves it: the only app rows the checker reads. Its
 * downstream key has the shape the worker sends (`charge:<payment id>`).
 */
export async function seedCheckout(
  sql: postgres.Sql,
  options: { tenantId?: string } = {},
): Promise<SeededPayment> {
  const tenantId = options.tenantId ?? 'tenant_a';
  const paymentId = `pay_${randomUUID()}`;
  const downstreamKey = `charge:${paymentId}`;
  const idempotencyKey = randomUUID();
  await sql`
    insert into payments (tenant_id, id, status, amount, currency, lines, idempotency_key, downstream_key)
    values (${tenantId}, ${paymentId}, 'processing', 1999, 'usd',
            ${JSON.stringify([{ productId: 'p1', name: 'Thing', quantity: 1, unitAmount: 1999 }])}::text::jsonb,
            ${idempotencyKey}, ${downstreamKey})`;
  return { tenantId, paymentId, downstreamKey, idempotencyKey };
}
