import { sql } from 'drizzle-orm';
import { bigint, index, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';
import { charges } from './charges.ts';

/** A refund of (part of) a succeeded charge. */
export const refunds = pgTable(
  'refunds',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    chargeId: text('charge_id')
      .notNull()
      .references(() => charges.id),
    paymentIntentId: text('payment_intent_id').notNull(),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    /** pending | succeeded | failed */
    status: text('status').notNull(),
    reason: text('reason'),
    failureReason: text('failure_reason'),
    /** An asynchronous refund (test cards): when it changes status, and to what. */
    settlesAt: timestamp('settles_at', { withTimezone: true, precision: 6 }),
    /** succeeded (a pending refund completes) | failed (a succeeded one fails, funds back) */
    settlesTo: text('settles_to'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index('refunds_charge_idx').on(t.chargeId),
    index('refunds_account_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
    // The settlement sweep finds the asynchronous refunds that are due.
    index('refunds_settles_at_idx').on(t.settlesAt).where(sql`${t.settlesAt} is not null`),
  ],
);
