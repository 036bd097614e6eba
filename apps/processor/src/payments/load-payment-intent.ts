import { and, eq } from 'drizzle-orm';
import type { ProcessorDatabase, ProcessorTransaction } from '../db/client.ts';
import { paymentIntents } from '../db/schema/index.ts';
import { resourceMissing } from '../stripe/stripe-error.ts';

/**
 * Reads a PaymentIntent of this account (another account's id is "no such"). With
 * `forUpdate`, holds its row lock until the transaction ends, serialising confirms.
 */
export async function loadPaymentIntent(
  db: ProcessorDatabase | ProcessorTransaction,
  accountId: string,
  id: string,
  options: { forUpdate?: boolean; param?: string } = {},
) {
  const where = and(eq(paymentIntents.id, id), eq(paymentIntents.accountId, accountId));
  const query = db.select().from(paymentIntents).where(where);
  const [row] = options.forUpdate ? await query.for('update') : await query;
  if (!row) throw resourceMissing('payment_intent', id, options.param ?? 'intent');
  return row;
}
