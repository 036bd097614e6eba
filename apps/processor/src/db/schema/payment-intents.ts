import { sql } from 'drizzle-orm';
import { bigint, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';

/** One PaymentIntent, stored in the columns its Stripe JSON is rendered from. */
export const paymentIntents = pgTable(
  'payment_intents',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    amountReceived: bigint('amount_received', { mode: 'number' }).notNull().default(0),
    /** What a capture may still take: the authorised amount while `requires_capture`, else 0. */
    amountCapturable: bigint('amount_capturable', { mode: 'number' }).notNull().default(0),
    currency: text('currency').notNull(),
    /**
     * requires_payment_method | requires_confirmation | requires_action | requires_capture |
     * succeeded | canceled
     */
    status: text('status').notNull(),
    /** automatic (confirm charges) | manual (confirm authorises; a capture charges) */
    captureMethod: text('capture_method').notNull().default('automatic'),
    /** While `requires_capture`: when the authorisation expires and the intent is canceled. */
    captureBefore: timestamp('capture_before', { withTimezone: true, precision: 6 }),
    cancellationReason: text('cancellation_reason'),
    /** Where the shopper returns after a 3-D Secure challenge (`return_url`). */
    returnUrl: text('return_url'),
    /** While `requires_action`: Stripe's `next_action` (the hosted challenge to open). */
    nextAction: jsonb('next_action').$type<Record<string, unknown>>(),
    /** While `requires_action`: the confirm's Idempotency-Key, booked on the charge it leads to. */
    actionIdempotencyKey: text('action_idempotency_key'),
    canceledAt: timestamp('canceled_at', { withTimezone: true, precision: 6 }),
    paymentMethod: text('payment_method'),
    /** The test card number behind `payment_method`: it decides the outcome of a charge. */
    cardNumber: text('card_number'),
    description: text('description'),
    customer: text('customer'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    latestCharge: text('latest_charge'),
    lastPaymentError: jsonb('last_payment_error').$type<Record<string, unknown>>(), // Stripe-shaped already
    clientSecret: text('client_secret').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index('payment_intents_account_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
    // Search by metadata (`metadata['order']:'42'`) is how the reconciler finds a payment.
    index('payment_intents_metadata_idx').using('gin', t.metadata.op('jsonb_path_ops')),
    // The expiry sweep finds the authorisations past their window.
    index('payment_intents_capture_before_idx')
      .on(t.captureBefore)
      .where(sql`${t.status} = 'requires_capture'`),
  ],
);

export type PaymentIntentRow = typeof paymentIntents.$inferSelect;
