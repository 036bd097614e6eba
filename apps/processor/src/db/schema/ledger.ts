import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  index,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';

/**
 * The ledger: one row per money movement, written in the same transaction as the charge
 * or refund and the stored idempotent response. It is the single source of truth for
 * "how many times was this customer charged" (chaos tests and the reconciler read it).
 */
export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    /** charge | refund */
    kind: text('kind').notNull(),
    paymentIntentId: text('payment_intent_id').notNull(),
    chargeId: text('charge_id').notNull(),
    refundId: text('refund_id'),
    amount: bigint('amount', { mode: 'number' }).notNull(),
    currency: text('currency').notNull(),
    /** The `Idempotency-Key` of the request that moved the money, if it had one. */
    idempotencyKey: text('idempotency_key'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 })
      .notNull()
      .default(sql`now()`),
  },
  (t) => [
    index('ledger_account_seq_idx').on(t.accountId, t.seq),
    index('ledger_payment_intent_idx').on(t.paymentIntentId),
    index('ledger_metadata_idx').using('gin', t.metadata.op('jsonb_path_ops')),
    // A charge is booked once, whatever happens above the database.
    uniqueIndex('ledger_one_row_per_charge').on(t.chargeId).where(sql`${t.kind} = 'charge'`),
  ],
);
