import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';
import { paymentIntents } from './payment-intents.ts';

/**
 * One attempt to move money for a PaymentIntent: succeeded (captured, or authorised and not
 * yet captured) or failed (declined).
 */
export const charges = pgTable(
  'charges',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    paymentIntentId: text('payment_intent_id')
      .notNull()
      .references(() => paymentIntents.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    /** What was captured: the amount for an automatic charge, set by the capture for a manual one. */
    amountCaptured: bigint('amount_captured', { mode: 'number' }).notNull().default(0),
    /** Refunded, including what a partial capture or a void released (as Stripe reports it). */
    amountRefunded: bigint('amount_refunded', { mode: 'number' }).notNull().default(0),
    /** False while a manual-capture charge is only authorised. */
    captured: boolean('captured').notNull().default(true),
    currency: text('currency').notNull(),
    /** succeeded | failed */
    status: text('status').notNull(),
    paymentMethod: text('payment_method'),
    failureCode: text('failure_code'),
    failureMessage: text('failure_message'),
    declineCode: text('decline_code'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index('charges_payment_intent_idx').on(t.paymentIntentId),
    // The database itself refuses a second successful charge of one PaymentIntent.
    uniqueIndex('charges_one_success_per_intent')
      .on(t.paymentIntentId)
      .where(sql`${t.status} = 'succeeded'`),
  ],
);
