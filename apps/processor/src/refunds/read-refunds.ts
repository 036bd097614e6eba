import { and, desc, eq, type SQL } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { refunds } from '../db/schema/index.ts';
import { renderRefund } from '../payments/render-objects.ts';
import { readString } from '../stripe/read-params.ts';
import { resourceMissing } from '../stripe/stripe-error.ts';
import type { ReadOperation } from '../stripe/stripe-operation.ts';
import { olderThanCursor, readListLimit, stripeListPage } from '../stripe/stripe-response.ts';

async function loadRefund(
  db: ProcessorDatabase | ProcessorTransaction,
  accountId: string,
  id: string,
  param = 'id',
) {
  const [refund] = await db
    .select()
    .from(refunds)
    .where(and(eq(refunds.id, id), eq(refunds.accountId, accountId)));
  if (!refund) throw resourceMissing('refund', id, param);
  return refund;
}

/** `GET /v1/refunds/:id` */
export const retrieveRefund: ReadOperation = async (db, { account, pathParams }) => ({
  status: 200,
  body: renderRefund(await loadRefund(db, account.id, pathParams.id!)),
});

/** `GET /v1/refunds`: newest first; `payment_intent`, `charge`, `limit` (1-100), `starting_after`. */
export const listRefunds: ReadOperation = async (db, { account, params }) => {
  const limit = readListLimit(params);
  const conditions: SQL[] = [eq(refunds.accountId, account.id)];
  const paymentIntent = readString(params, 'payment_intent');
  if (paymentIntent) conditions.push(eq(refunds.paymentIntentId, paymentIntent));
  const charge = readString(params, 'charge');
  if (charge) conditions.push(eq(refunds.chargeId, charge));
  const startingAfter = readString(params, 'starting_after');
  if (startingAfter) {
    const cursor = await loadRefund(db, account.id, startingAfter, 'starting_after');
    conditions.push(olderThanCursor(refunds, cursor.id));
  }
  const rows = await db
    .select()
    .from(refunds)
    .where(and(...conditions))
    .orderBy(desc(refunds.createdAt), desc(refunds.id))
    .limit(limit + 1);
  return stripeListPage(rows, limit, renderRefund, '/v1/refunds');
};
