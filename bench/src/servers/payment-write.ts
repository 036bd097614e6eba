import { randomUUID } from 'node:crypto';
import type { Database } from '@once/db';
import { OUTBOX_NOTIFY_CHANNEL, outboxJobs, payments, products } from '@once/db/schema';
import { and, eq, type SQL, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';

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

/** Accepts unknown JSON as a pay input or throws (every variant validates the same way). */
export function parsePayInput(value: unknown): BenchPayInput {
  const v = value as Partial<BenchPayInput> | null;
  if (typeof v?.productId !== 'string' || !Number.isInteger(v.quantity)) {
    throw new Error('body must be { productId: string, quantity: integer }');
  }
  return { productId: v.productId, quantity: v.quantity! };
}

const dialect = new PgDialect();

/**
 * The business write of every variant, the same work as `checkout.pay`: price from the
 * catalogue, insert the payment and its outbox job, NOTIFY the workers; `complete` (given the
 * result) lets a guard complete its key in the same transaction. Tuned alike for every
 * variant: each statement is named and prepared (one round trip, not two), and the writes
 * after the price read go out together in one pipelined batch (if one fails, the transaction
 * rolls back with all of them).
 */
export async function writePayment(
  tx: Transaction,
  input: BenchPayInput,
  idempotencyKey: string,
  complete?: (result: BenchPayResult) => Promise<unknown>,
): Promise<BenchPayResult> {
  const [product] = await tx
    .select({ unitAmount: products.unitAmount, currency: products.currency })
    .from(products)
    .where(and(eq(products.tenantId, BENCH_TENANT), eq(products.id, input.productId)))
    .prepare('bench_price')
    .execute();
  if (!product) throw new Error(`unknown product ${input.productId}`);
  const paymentId = `pay_${randomUUID().replaceAll('-', '')}`;
  const downstreamKey = `once_pay_${paymentId}`;
  const amount = product.unitAmount * input.quantity;
  const jobId = `job_${randomUUID().replaceAll('-', '')}`;
  const result: BenchPayResult = {
    paymentId,
    status: 'processing',
    amount,
    currency: product.currency,
  };
  await Promise.all([
    tx
      .insert(payments)
      .values({
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
      })
      .prepare('bench_insert_payment')
      .execute(),
    tx
      .insert(outboxJobs)
      .values({
        tenantId: BENCH_TENANT,
        id: jobId,
        kind: 'charge_payment',
        paymentId,
        downstreamKey,
        payload: { amount, currency: product.currency },
      })
      .prepare('bench_insert_job')
      .execute(),
    notify(tx, JSON.stringify({ tenantId: BENCH_TENANT, jobId })),
    complete?.(result),
  ]);
  return result;
}

/** A statement built once and run as a named prepared statement (in a transaction, or autocommit on the pool). */
function preparedInTx(name: string, statement: SQL) {
  const query = dialect.sqlToQuery(statement);
  return (tx: Transaction | Database, values: Record<string, unknown>): Promise<unknown> =>
    tx._.session.prepareQuery(query, undefined, name, false).execute(values);
}

/** NOTIFY as a prepared statement (drizzle's `execute(sql)` has no `.prepare`). */
const notifyStatement = preparedInTx(
  'bench_notify',
  sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, ${sql.placeholder('payload')})`,
);
const notify = (tx: Transaction, payload: string) => notifyStatement(tx, { payload });

/** One more row with a primary key: the floors write it, no library. */
const floorRowStatement = preparedInTx(
  'bench_floor_row',
  sql`insert into bench_floor (id) values (${sql.placeholder('id')})`,
);

/**
 * The payment write without a guard, alone or with its floor: `durable` writes the floor row
 * as its own autocommit before the transaction (what a reservation that commits on its own
 * must pay at least: leased mode), `in-transaction` in the transaction's batch (what a guard
 * that stores its key with the payment must pay at least: atomic mode).
 */
export async function writeUnguarded(
  db: Database,
  input: BenchPayInput,
  key: string,
  floor?: 'durable' | 'in-transaction',
): Promise<BenchPayResult> {
  if (floor === 'durable') await floorRowStatement(db, { id: key });
  return db.transaction((tx) =>
    writePayment(
      tx,
      input,
      key,
      floor === 'in-transaction' ? () => floorRowStatement(tx, { id: key }) : undefined,
    ),
  );
}
