import { randomUUID } from 'node:crypto';
import type { Database } from '@once/db';
import { OUTBOX_NOTIFY_CHANNEL, outboxJobs, payments, products } from '@once/db/schema';
import { and, eq, sql } from 'drizzle-orm';

/** A transaction of the app database, as `db.transaction` hands it over. */
export type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/** The request body every variant of the bench endpoint accepts. */
export interface BenchPayInput {
  productId: string;
  quantity: number;
}

export interface BenchPayResult {
  paymentId: string;
  status: 'processing';
  amount: number;
  currency: string;
}

export const BENCH_TENANT = 'tenant_a';
export const BENCH_BODY: BenchPayInput = { productId: 'book_sre', quantity: 1 };

/** Accepts unknown JSON as a pay input or throws (every variant validates the same way). */
export function parsePayInput(value: unknown): BenchPayInput {
  const v = value as Partial<BenchPayInput> | null;
  if (typeof v?.productId !== 'string' || !Number.isInteger(v.quantity)) {
    throw new Error('body must be { productId: string, quantity: integer }');
  }
  return { productId: v.productId, quantity: v.quantity! };
}

/**
 * The business write of every variant, the same work as `checkout.pay`: price from the
 * catalogue, insert the payment and its outbox job, NOTIFY the workers. The caller owns the
 * transaction, so a guard can complete its key inside it.
 */
export async function writePayment(
  tx: Transaction,
  input: BenchPayInput,
  idempotencyKey: string,
): Promise<BenchPayResult> {
  const [product] = await tx
    .select({ unitAmount: products.unitAmount, currency: products.currency })
    .from(products)
    .where(and(eq(products.tenantId, BENCH_TENANT), eq(products.id, input.productId)));
  if (!product) throw new Error(`unknown product ${input.productId}`);
  const paymentId = `pay_${randomUUID().replaceAll('-', '')}`;
  const downstreamKey = `once_pay_${paymentId}`;
  const amount = product.unitAmount * input.quantity;
  await tx.insert(payments).values({
    tenantId: BENCH_TENANT,
    id: paymentId,
    status: 'processing',
    amount,
    currency: product.currency,
    lines: [
      {
        productId: input.productId,
        name: input.productId,
        quantity: input.quantity,
        unitAmount: product.unitAmount,
      },
    ],
    idempotencyKey,
    downstreamKey,
  });
  const jobId = `job_${randomUUID().replaceAll('-', '')}`;
  await tx.insert(outboxJobs).values({
    tenantId: BENCH_TENANT,
    id: jobId,
    kind: 'charge_payment',
    paymentId,
    downstreamKey,
    payload: { amount, currency: product.currency },
  });
  await tx.execute(
    sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, ${JSON.stringify({ tenantId: BENCH_TENANT, jobId })})`,
  );
  return { paymentId, status: 'processing', amount, currency: product.currency };
}
